package ulfm

import "fmt"

// Revoke is the revoked state of one group at one member, and the flood that spreads it:
// the first time a member learns of the revocation it tells every other member it does
// not know failed. A Revoke has one owner, who serializes its calls.
type Revoke struct {
	me, n   int
	failed  Bitmap
	revoked bool
}

// NewRevoke returns the Revoke of member me of a group of n members, failed holding
// the members me already knows failed. It panics on arguments outside these rules.
func NewRevoke(me, n int, failed Bitmap) *Revoke {
	if n < 1 || n > MaxMembers || me < 0 || me >= n || !failed.fits(n) || failed.Has(me) {
		panic(fmt.Sprintf("ulfm: revoke of member %d of a group of %d, failed %v", me, n, failed.Members()))
	}
	f := NewBitmap(n)
	f.Union(failed)
	return &Revoke{me: me, n: n, failed: f}
}

// Local revokes the group at me's request: the first call returns a Revoke message for
// every other member not known failed, later calls nothing.
func (r *Revoke) Local() []Send { return r.flood(-1) }

// Recv handles a Revoke message from member from, dead or alive: the first revocation
// me learns of is forwarded to every member but me, from and those known failed.
func (r *Revoke) Recv(from int) []Send {
	if from < 0 || from >= r.n || from == r.me {
		panic(fmt.Sprintf("ulfm: member %d of %d got a revoke from member %d", r.me, r.n, from))
	}
	return r.flood(from)
}

// Failed tells r that member failed, so no revocation is sent to it.
func (r *Revoke) Failed(member int) {
	if member < 0 || member >= r.n || member == r.me {
		panic(fmt.Sprintf("ulfm: member %d of %d told that member %d failed", r.me, r.n, member))
	}
	r.failed.Set(member)
}

// Revoked reports whether the group is revoked at me.
func (r *Revoke) Revoked() bool { return r.revoked }

func (r *Revoke) flood(skip int) []Send {
	if r.revoked {
		return nil
	}
	r.revoked = true
	out := make([]Send, 0, r.n-1)
	for i := range r.n {
		if i != r.me && i != skip && !r.failed.Has(i) {
			out = append(out, Send{To: i, M: Msg{Kind: KindRevoke, N: uint32(r.n)}})
		}
	}
	return out
}
