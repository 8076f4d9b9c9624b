package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/hook"
	"github.com/tinehq/tine/layout"
)

// setupResult is what tine setup did, for --json.
type setupResult struct {
	Agent   hook.Agent `json:"agent"`
	Path    string     `json:"path"`
	Action  string     `json:"action"` // install or remove
	Changed bool       `json:"changed"`
	Events  []string   `json:"events"`
	Command string     `json:"command,omitempty"`
	// Trusted is set when the hooks were marked trusted (Codex).
	Trusted bool `json:"trusted,omitempty"`
	// MCP is set when the settings define tine's MCP server (Codex).
	MCP bool `json:"mcp,omitempty"`
	// UserMCP is set when the settings define an MCP server by tine's
	// server's name that is not tine's (the user's own, kept; Codex).
	UserMCP bool `json:"user_mcp,omitempty"`
	// Note tells what the install does not cover.
	Note string `json:"note,omitempty"`
}

// claudeProjectNote is what --project cannot do for Claude Code.
const claudeProjectNote = "Claude Code reads a project's .claude/settings.json only when started in that directory " +
	"(checked with 2.1.332), not in a subdirectory; tine setup claude (the user's settings) covers every directory, " +
	"and its hook acts only in managed workspaces"

func newSetup(a *app) *cobra.Command {
	var project, bin string
	var remove, asJSON bool
	c := &cobra.Command{
		Use:   "setup claude|codex|daemon",
		Short: "Install tine's hooks into an agent's settings, or the system daemon",
		Long: `tine setup daemon (as root) installs and starts a systemd unit running
"tine serve --system" as root, so every local user reaches the daemon on
/run/tine/tine.sock and runs forks, services and agents as themselves; with
--remove it stops and removes it (runs keep running). Without systemd it
prints the one command that starts the daemon by hand (--remove then stops
the daemon listening on the socket).

tine setup claude|codex adds entries running "tine hook AGENT" to the agent's settings: PreToolUse and
PostToolUse for Bash (and PostToolUseFailure for Claude Code), UserPromptSubmit
and Stop. Other settings and hooks are kept; running it twice adds nothing;
--remove deletes exactly tine's entries. The file is replaced atomically with
its permissions kept, and left untouched if it cannot be read.

  Claude Code: ~/.claude/settings.json, or PROJECT/.claude/settings.json
  Codex:       $CODEX_HOME/config.toml (~/.codex), or PROJECT/.codex/config.toml

The user's settings are the default: the hook acts only where tine manages the
files (inside runs, and in a managed workspace or a fork's view on the host),
so it is harmless elsewhere, and it covers an agent started in any
subdirectory. --project DIR inside a managed workspace writes at the
workspace's root; Claude Code reads project settings only from the directory
it starts in, so for agents started in subdirectories use the default.

Codex runs a hook only once it is trusted: tine records its hooks as trusted
in the same file (hooks.state, the trusted_hash Codex's /hooks review
writes), so codex exec runs them; project hooks also need a trusted project.`,
		Example: `  sudo tine setup daemon
  tine setup claude
  tine setup codex
  tine setup claude --project . --remove`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if args[0] == "daemon" {
				return a.setupDaemon(c.Context(), remove, asJSON)
			}
			agent, err := hook.ParseAgent(args[0])
			if err != nil {
				return usageErr(c, err.Error())
			}
			if project != "" {
				if project, err = projectRoot(c.Context(), a.home, project); err != nil {
					return err
				}
			}
			path, err := hook.SettingsPath(agent, project)
			if err != nil {
				return err
			}
			res := setupResult{Agent: agent, Path: path, Action: "install", Events: hook.Events(agent)}
			if project != "" && agent == hook.Claude && !remove {
				res.Note = claudeProjectNote
			}
			if remove {
				res.Action = "remove"
				res.Changed, err = hook.Uninstall(agent, path)
			} else {
				res.Command = hook.HookCommand(bin, agent)
				res.Changed, err = hook.Install(agent, path, bin)
				res.Trusted = err == nil && agent == hook.Codex
				if res.Trusted {
					res.MCP, res.UserMCP = codexMCP(path)
				}
			}
			if err != nil {
				return fmt.Errorf("%w: %w", err, tine.ErrInvalid)
			}
			if asJSON {
				return a.printJSON(res)
			}
			a.printSetup(res)
			return nil
		},
	}
	c.Flags().StringVar(&project, "project", "", "install into this project's settings instead of the user's")
	c.Flags().BoolVar(&remove, "remove", false, "remove tine's hooks")
	c.Flags().StringVar(&bin, "tine", "tine", "the tine command the hooks run")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// codexMCP reports whether the Codex config at path defines tine's MCP
// server (in tine's block), or one of the user's by its name.
func codexMCP(path string) (tines, users bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, false
	}
	tines = hook.CodexBlockHasMCP(b)
	return tines, !tines && hook.CodexHasMCP(b)
}

// projectRoot is the directory --project DIR names: the root of the
// managed workspace (or fork view) DIR is in, else DIR itself.
func projectRoot(ctx context.Context, home, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	w, r, err := runAt(ctx, home, abs)
	if err != nil || r == nil {
		return abs, nil
	}
	if r.Role == tine.RoleSource {
		return w.Path, nil
	}
	return layout.New(home).Run(w.ID, r.ID).View(), nil
}

func (a *app) printSetup(r setupResult) {
	events := strings.Join(r.Events, ", ")
	switch {
	case r.Action == "remove" && r.Changed:
		fmt.Fprintf(a.stdout, "removed tine's hooks from %s\n", r.Path)
	case r.Action == "remove":
		fmt.Fprintf(a.stdout, "no tine hooks in %s\n", r.Path)
	case r.Changed:
		fmt.Fprintf(a.stdout, "added %q to %s for %s\n", r.Command, r.Path, events)
	default:
		fmt.Fprintf(a.stdout, "tine's hooks are already in %s\n", r.Path)
	}
	if r.Trusted {
		fmt.Fprintf(a.stdout, "marked them trusted for Codex in %s\n", r.Path)
	}
	switch {
	case r.MCP:
		fmt.Fprintf(a.stdout, "Codex runs tine's MCP server (mcp_servers.%s): from Codex's sandbox, which blocks tine's socket, its tools reach tine\n", hook.CodexMCPServer)
	case r.UserMCP:
		fmt.Fprintf(a.stdout, "note: no mcp_servers.%s added (the file defines an MCP server of that name of its own, kept as it is): from Codex's sandbox, tine effect and tine fork-self cannot reach tine unless it runs `tine mcp`\n", hook.CodexMCPServer)
	case r.Trusted:
		fmt.Fprintf(a.stdout, "note: no mcp_servers.%s added (the file defines mcp_servers in a way a table cannot extend): from Codex's sandbox, tine effect and tine fork-self cannot reach tine\n", hook.CodexMCPServer)
	}
	if r.Note != "" {
		fmt.Fprintf(a.stdout, "note: %s\n", r.Note)
	}
}
