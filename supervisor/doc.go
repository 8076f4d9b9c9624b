// Package supervisor runs a run's supervisor: the tine binary re-executed
// as the first process of the run's namespaces (mount, pid, uts, ipc and,
// when isolated, net), like a container shim. It is the reaper of the
// run's processes, starts its declared services and the commands of tine
// exec, forwards published ports, and outlives the command that launched
// it. Commands talk to it over a unix socket in the run's directory.
package supervisor
