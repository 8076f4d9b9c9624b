package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/hook"
)

// setupResult is what tine setup did, for --json.
type setupResult struct {
	Agent   hook.Agent `json:"agent"`
	Path    string     `json:"path"`
	Action  string     `json:"action"` // install or remove
	Changed bool       `json:"changed"`
	Events  []string   `json:"events"`
	Command string     `json:"command,omitempty"`
}

func newSetup(a *app) *cobra.Command {
	var project, bin string
	var remove, asJSON bool
	c := &cobra.Command{
		Use:   "setup claude|codex",
		Short: "Install tine's hooks into an agent's settings",
		Long: `Adds entries running "tine hook AGENT" to the agent's settings: PreToolUse and
PostToolUse for Bash (and PostToolUseFailure for Claude Code), UserPromptSubmit
and Stop. Other settings and hooks are kept; running it twice adds nothing;
--remove deletes exactly tine's entries. The file is replaced atomically with
its permissions kept, and left untouched if it cannot be read.

  Claude Code: PROJECT/.claude/settings.json, else ~/.claude/settings.json
  Codex:       PROJECT/.codex/config.toml, else ~/.codex/config.toml

Codex runs a new hook only once it is reviewed and trusted (/hooks in Codex),
and project hooks only in a trusted project.`,
		Example: `  tine setup claude --project .
  tine setup codex
  tine setup claude --project . --remove`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			agent, err := hook.ParseAgent(args[0])
			if err != nil {
				return usageErr(c, err.Error())
			}
			path, err := hook.SettingsPath(agent, project)
			if err != nil {
				return err
			}
			res := setupResult{Agent: agent, Path: path, Action: "install", Events: hook.Events(agent)}
			if remove {
				res.Action = "remove"
				res.Changed, err = hook.Uninstall(agent, path)
			} else {
				res.Command = hook.HookCommand(bin, agent)
				res.Changed, err = hook.Install(agent, path, res.Command)
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
}
