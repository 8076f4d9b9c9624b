// Package config reads tine.toml, the file at a workspace's root that
// declares how its runs live: the services each run starts, the resource
// limits of its cgroup, and whether it gets a network identity of its own.
package config
