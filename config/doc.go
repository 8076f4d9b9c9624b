// Package config reads tine.toml, the file at a workspace's root that
// declares how its runs live (the services each run starts, the resource
// limits of its cgroup, whether it gets a network identity of its own) and
// how `tine fork-run` races agents in forks of a run ([fork], [agent.NAME],
// [judge.llm], [[account]]).
package config
