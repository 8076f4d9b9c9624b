// Package fleet runs tine on several machines that share one PostgreSQL
// database: nodes (full local tines, each the home of the workspaces it
// makes) register and heartbeat there, and fork-run tasks are queued there
// with River and taken by the nodes with capacity.
package fleet
