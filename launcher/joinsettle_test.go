package launcher

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// startingDelegate is a seed member's delegate whose first NodeMeta call blocks until
// release closes. memberlist.Create calls it after it starts listening and before it puts
// the member in its own table, so while it blocks the seed answers joins with no members.
type startingDelegate struct {
	asked   chan struct{}
	release chan struct{}
	once    sync.Once
}

func (d *startingDelegate) NodeMeta(int) []byte {
	d.once.Do(func() {
		close(d.asked)
		<-d.release
	})
	return []byte("v=1")
}
func (d *startingDelegate) NotifyMsg([]byte)                {}
func (d *startingDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (d *startingDelegate) LocalState(bool) []byte          { return nil }
func (d *startingDelegate) MergeRemoteState([]byte, bool)   {}

// TestJoinSeedStarting: a member that joins a seed while the seed is still starting (it
// answers, but is not yet in its own table) ends its join knowing the seed. A join of
// only its own address does not wait for a peer.
func TestJoinSeedStarting(t *testing.T) {
	key := bytes.Repeat([]byte{9}, 32)
	port := freeLoopbackPort(t)
	keyring, err := memberlist.NewKeyring(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	mc := tunedConfig()
	mc.Name, mc.BindAddr, mc.BindPort = "seed", "127.0.0.1", port
	mc.Label, mc.Keyring = clusterLabel, keyring
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	d := &startingDelegate{asked: make(chan struct{}), release: make(chan struct{})}
	mc.Delegate = d
	mc.LogOutput = &bytes.Buffer{}
	created := make(chan *memberlist.Memberlist, 1)
	go func() {
		ml, err := memberlist.Create(mc)
		if err != nil {
			t.Error(err)
		}
		created <- ml
	}()
	defer func() {
		if ml := <-created; ml != nil {
			ml.Shutdown()
		}
	}()
	select {
	case <-d.asked:
	case <-time.After(testbudget.Scale(10 * time.Second)):
		close(d.release)
		t.Fatal("the seed never asked for its metadata")
	}

	j, err := newCluster(clusterConfig{Name: "joiner", Bind: "127.0.0.1:0", Key: key})
	if err != nil {
		close(d.release)
		t.Fatal(err)
	}
	defer j.close()
	seed := fmt.Sprintf("127.0.0.1:%d", port)
	// The seed stays half started for a while after the first Join reached it.
	go func() {
		time.Sleep(3 * joinRejoinAfter)
		close(d.release)
	}()
	if err := j.join([]string{seed}); err != nil {
		t.Fatalf("join a starting seed: %v", err)
	}
	var names []string
	for _, m := range j.members() {
		names = append(names, m.Name)
	}
	if len(names) != 2 || names[1] != "seed" {
		t.Errorf("members after the join: %v, want [joiner seed]", names)
	}

	self, err := newCluster(clusterConfig{Name: "self", Bind: "127.0.0.1:0", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer self.close()
	if !self.onlySelf([]string{self.addr()}) || self.onlySelf([]string{self.addr(), seed}) {
		t.Errorf("onlySelf: wrong for its own address %s, or with the seed's %s beside it", self.addr(), seed)
	}
	if err := self.join([]string{self.addr()}); err != nil {
		t.Fatalf("join of its own address: %v", err)
	}
}
