// Package netns gives each tine run its own address on a tine bridge: it
// creates the bridge (with optional NAT to the outside), wires a veth pair
// into a run's network namespace, allocates addresses from the bridge's
// subnet, and proxies published ports from the host into a run.
package netns
