// Package netns builds test hosts out of Linux network namespaces. Each host is a
// namespace with its own address on a private bridge, in a switch namespace of its own. So
// tests can run agents and ranks "on different hosts" of one machine, kill a host, or cut
// its link, without touching the machine's own network. It needs root and iproute2 (`ip`);
// tests call [Available] and skip without them.
//
// All addresses live in 10.231.N.0/24 inside the namespaces this package creates. Reach
// them only from inside a test host ([Host.Command]): the root namespace has no route to
// them, and its default route leads off the machine, so a dial from there would leave it.
//
// Concurrency: a Cluster is used by one test goroutine; Close removes every namespace.
package netns
