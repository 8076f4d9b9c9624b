// Package netproxy gives a sandbox (package sandbox: a normal user's
// command in a user namespace of its own, without the daemon) a network of
// its own held by a run's egress policy, from what an unprivileged process
// may do. The sandbox's child, root in its user namespace and so the owner
// of the network namespace it unshared, brings lo up, routes every address
// to lo, and installs the policy's rules (egress.InstallProxy): DNS to
// 127.0.0.1:53, the TCP connections the policy allows (its prefixes, the
// addresses the resolver pinned) to a proxy port, every other TCP or UDP
// connection refused at its first packet and remembered. It passes its
// listening sockets and a netlink socket of the namespace to its parent
// (SCM_RIGHTS), and runs the command once the parent serves them. The
// parent, tine exec in the host's network, is the trusted side: it serves
// the sockets itself, answering DNS with egress.Resolver and pinning in
// the child's rules through the netlink socket (egress.ProxyRules),
// dialling a connection's original destination (SO_ORIGINAL_DST) after a
// check of its own, a host port's connection to the host's 127.0.0.1:P,
// and recording what the rules and the resolver refuse as egress records.
package netproxy
