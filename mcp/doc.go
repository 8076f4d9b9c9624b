// Package mcp is tine's Model Context Protocol server (tine mcp): tools an
// agent calls to fork its run, compare and diff the forks, and merge,
// choose or discard them, each one a request to the tine daemon's HTTP API,
// so that from inside a run the daemon's lineage scope and approvals apply.
package mcp
