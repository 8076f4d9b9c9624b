package forkrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/budget"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/grouprec"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/internal/runenv"
)

// How a fork-run's conversation was chosen (Conversation.From).
const (
	FromGiven  = "given"  // --session (Options.Session)
	FromNewest = "newest" // the newest session started in the workspace in the agent's store (Claude's projects, Codex's sessions)
	FromHook   = "hook"   // the session the run's hook last reported (claude: when Claude's store has it)
)

// Conversation is the agent conversation every fork continues, each in a
// session of its own (claude --resume S --fork-session, codex exec fork
// S), S itself left untouched.
type Conversation struct {
	Session string `json:"session"`
	From    string `json:"from"` // FromGiven, FromNewest or FromHook
	// Transcript is the session's file: Claude's transcript, Codex's
	// rollout. Cwd is where a Claude session was started.
	Transcript string `json:"transcript,omitempty"`
	Cwd        string `json:"cwd,omitempty"`
	// Dir is where each fork's agent continues it, relative to the
	// workspace: the directory the session was started in when it is
	// inside the workspace (empty: the workspace path). Claude Code
	// releases before 2.1.300 resume only sessions of the directory they
	// start in.
	Dir string `json:"dir,omitempty"`
	// BaseUSD (claude) and BaseTokens (codex) are the session's running
	// totals when forked, which the agents' own totals include: they are
	// not charged to the forks.
	BaseUSD    float64      `json:"base_usd,omitempty"`
	BaseTokens *agent.Usage `json:"base_tokens,omitempty"`
}

// chooseConversation finds the conversation the forks continue, before
// anything is forked: o.Session when given (it must exist), else the one
// the run's hook reported, else the newest session started in the
// workspace or below it in the agent's store (sessions tine's forks made
// skipped). nil, with a note, when the
// forks start new conversations (o.Fresh, or none found). accounts are
// the forks' accounts: each must see the session.
func chooseConversation(ctx context.Context, e Records, src engine.Ref, o *Options, accounts []budget.Account) (*Conversation, string, error) {
	switch {
	case o.Agent.Kind == agent.CommandKind:
		return nil, "", nil
	case o.Fresh:
		return nil, "--fresh: the forks start new conversations", nil
	case o.Agent.Kind == agent.Claude:
		return claudeConversation(ctx, e, src, o, accounts)
	}
	return codexConversation(ctx, e, src, o)
}

// codexConversation is chooseConversation for Codex: o.Session, else the
// session the run's hook reported, else the newest session started in the
// workspace or below it in Codex's store (CODEX_HOME/sessions), sessions
// tine's forks made skipped.
func codexConversation(ctx context.Context, e Records, src engine.Ref, o *Options) (*Conversation, string, error) {
	home := agent.CodexHome(agentEnviron(src, o.BaseEnv, o.AgentEnv))
	c := &Conversation{Session: o.Session, From: FromGiven}
	if c.Session == "" {
		c.Session, c.From = e.AgentSession(ctx, src, string(o.Agent.Kind)), FromHook
	}
	if c.Session == "" {
		forks := forkSessions(e, src.Workspace.ID)
		s, err := agent.LatestCodexSession(home, src.Workspace.Path, func(id string) bool { return forks[id] })
		if err != nil {
			return nil, fmt.Sprintf("no codex session was started in %s or below it (%s): the forks start new conversations; a session given with --session (session over MCP) is continued",
				src.Workspace.Path, filepath.Join(home, "sessions")), nil
		}
		c.Session, c.From, c.Cwd = s.ID, FromNewest, s.Cwd
	}
	base, err := agent.CodexSessionUsage(home, c.Session)
	if err != nil {
		return nil, "", tine.Optionf("%s: %w (%s names another, %s starts without one): %w", sessionOrigin(c.From), err, tine.Opt("session"), tine.Opt("fresh"), tine.ErrInvalid)
	}
	c.Transcript, _ = agent.CodexRollout(home, c.Session)
	c.BaseTokens = &base
	return c, "", nil
}

// claudeConversation is chooseConversation for Claude. Without
// o.Session, the session the run's hook last reported (tine serve records
// it) comes first when Claude's store has it: every run's agent works at
// the workspace path, so the newest session there may be another run's.
func claudeConversation(ctx context.Context, e Records, src engine.Ref, o *Options, accounts []budget.Account) (*Conversation, string, error) {
	config := agent.ClaudeConfigDir(agentEnviron(src, o.BaseEnv, o.AgentEnv))
	var s agent.ClaudeSession
	var err error
	from := FromGiven
	hook := ""
	if o.Session == "" {
		hook = e.AgentSession(ctx, src, string(agent.Claude))
	}
	switch {
	case o.Session != "":
		s, err = agent.FindClaudeSession(config, o.Session)
	case hook != "":
		if s, err = agent.FindClaudeSession(config, hook); err == nil {
			from = FromHook
			break
		}
		fallthrough
	default:
		from = FromNewest
		forks := forkSessions(e, src.Workspace.ID)
		s, err = agent.LatestClaudeSession(config, src.Workspace.Path, func(id string) bool { return forks[id] })
		if errors.Is(err, agent.ErrNoClaudeSession) {
			return nil, fmt.Sprintf("no Claude session was started in %s or below it (%s): the forks start new conversations",
				src.Workspace.Path, filepath.Join(config, "projects")), nil
		}
	}
	if err != nil {
		return nil, "", tine.Optionf("%s: %w (%s starts without one): %w", sessionOrigin(from), err, tine.Opt("fresh"), tine.ErrInvalid)
	}
	for _, acc := range accounts {
		dir := agent.ClaudeConfigDir(agentEnviron(src, o.BaseEnv, append(append([]string(nil), o.AgentEnv...), acc.Environ()...)))
		if dir == config {
			continue
		}
		if _, err := agent.FindClaudeSession(dir, s.ID); err != nil {
			return nil, "", tine.Optionf("account %s: %w: its forks could not continue the conversation (%s starts without one): %w", acc.Name, err, tine.Opt("fresh"), tine.ErrInvalid)
		}
	}
	return &Conversation{Session: s.ID, From: from, Transcript: s.Transcript, Cwd: s.Cwd, Dir: startDir(src.Workspace.Path, s.Cwd), BaseUSD: s.CostUSD}, "", nil
}

// startDir is cwd relative to the workspace at ws when it is a directory
// below it, else "" (the workspace path itself).
func startDir(ws, cwd string) string {
	rel, err := filepath.Rel(ws, cwd)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return ""
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return ""
	}
	return rel
}

// describe says in a line what the forks continue.
func (c *Conversation) describe(kind agent.Kind) string {
	how := map[string]string{FromGiven: "given by --session", FromHook: "the one the run's hook reported",
		FromNewest: "the newest started in " + c.Cwd}[c.From]
	return fmt.Sprintf("every fork continues %s session %s (%s), each in a session of its own; %s is left as it was", kind, c.Session, how, c.Session)
}

// agentEnviron is the environment an agent with extra variables gets in
// a fork of src, as engine.Engine.ExecWith makes it: the owner's HOME and
// identity, the run's variables, then extra; made from base, the owner's
// environment, when not nil (Options.BaseEnv), else this process's.
func agentEnviron(src engine.Ref, base, extra []string) []string {
	from := src.Workspace.UID
	if base == nil {
		base, from = os.Environ(), os.Getuid()
	}
	return account.Setenv(runenv.For(src.Workspace, src.Run, base, from), extra...)
}

// sessionOrigin names where a session to continue came from, for errors.
func sessionOrigin(from string) string {
	switch from {
	case FromGiven:
		return "--session"
	case FromHook:
		return "the session the run's hook reported"
	}
	return "the newest session"
}

// forkSessions are the agent sessions the forks of workspace ws's
// fork-runs made, read from their reports: conversations of forks, not
// of the workspace's own agent.
func forkSessions(e Records, ws string) map[string]bool {
	out := map[string]bool{}
	lw := e.Layout().Workspace(ws)
	dirs, _ := os.ReadDir(lw.Groups())
	for _, d := range dirs {
		var rep Report
		if !d.IsDir() || grouprec.Open(lw.Group(d.Name())).LoadReport(&rep) != nil {
			continue
		}
		for _, f := range rep.Forks {
			if f.Agent.SessionID != "" {
				out[f.Agent.SessionID] = true
			}
		}
	}
	return out
}
