// Package netproxy gives a sandbox (package sandbox: a normal user's
// command in a user namespace of its own, without the daemon) a network of
// its own held by a run's egress policy, from what an unprivileged process
// may do. The sandbox's child, root in its user namespace and so the owner
// of the network namespace it unshared, brings lo up, routes every IPv4
// address to lo, sends DNS to 127.0.0.1:53 and every other TCP connection
// off the loopback to a proxy port (nftables redirect), and listens there,
// on 53 and on each host port; then it passes those sockets to its parent
// (SCM_RIGHTS) and goes on to run the command. The parent, tine exec in
// the host's network, is the trusted side: it serves the sockets itself,
// answering DNS with egress.Resolver, dialling a connection's original
// destination (SO_ORIGINAL_DST) only when the resolver pinned it for that
// port or a prefix rule allows it, and a host port's connection to the
// host's 127.0.0.1:P. What it refuses is recorded as egress records.
package netproxy
