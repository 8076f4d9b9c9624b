// Package egress is a run's outbound network policy: which host names,
// addresses and ports code in a fork may reach, a resolver that answers
// only allowed names and pins the addresses it returned, the nftables
// rules (inside the run's own network namespace) that refuse everything
// else, and the record of every refusal, kept as evidence on the run.
package egress
