package collectives

import "testing"

// TestSelectHierLong: a job spanning hosts takes hier below allreduceHierLongMsg, and
// from there, when p is a power of two and each host's ranks are consecutive, lanes (a
// commutative operator and as many ranks on every host) or Rabenseifner; hier otherwise.
func TestSelectHierLong(t *testing.T) {
	two := locality{hosts: 2, shared: true, contiguous: true}
	mixed := locality{hosts: 2, shared: true}
	even := locality{hosts: 2, shared: true, contiguous: true, even: true}
	for _, c := range []struct {
		bytes, p    int
		commutative bool
		loc         locality
		want        algo
	}{
		{allreduceHierLongMsg - 8, 8, true, two, algoHier},
		{allreduceHierLongMsg, 8, true, two, algoRabenseifner},
		{64 << 20, 8, false, two, algoRabenseifner},
		{64 << 20, 6, true, two, algoHier},            // not a power of two
		{64 << 20, 8, true, mixed, algoHier},          // a host's ranks not consecutive
		{64 << 20, 8, false, mixed, algoRabenseifner}, // hier cannot keep rank order
		{allreduceHierLongMsg - 8, 8, true, even, algoHier},
		{allreduceHierLongMsg, 8, true, even, algoLanes},
		{64 << 20, 8, false, even, algoRabenseifner}, // lanes combines in arrival order
	} {
		if got := selectAllreduce(algoAuto, c.bytes, c.bytes/8, c.p, c.commutative, c.loc); got != c.want {
			t.Errorf("selectAllreduce(%d B, p=%d, commutative %v, %+v) = %v, want %v", c.bytes, c.p, c.commutative, c.loc, got, c.want)
		}
	}
}
