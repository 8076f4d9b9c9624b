package forkrun

import (
	"slices"
	"strings"
	"testing"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/config"
)

func TestAgentSecrets(t *testing.T) {
	env := []string{"HOME=/nonexistent", "CLAUDE_CODE_USE_BEDROCK=1", "AWS_SECRET_ACCESS_KEY=s", "GITHUB_TOKEN=g", "ANTHROPIC_API_KEY=a", "PATH=/bin"}
	o := &Options{Agent: agent.Config{Kind: agent.Claude}}
	pass, withheld := agentSecrets(o, env)
	if !slices.Equal(pass, []string{"AWS_SECRET_ACCESS_KEY=s"}) || !slices.Equal(withheld, []string{"GITHUB_TOKEN"}) {
		t.Errorf("defaults: pass %v, withheld %v", pass, withheld)
	}
	o.Secrets = config.Secrets{Env: []string{"AWS_*"}}
	pass, withheld = agentSecrets(o, env)
	if len(pass) != 0 || !slices.Equal(withheld, []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"}) {
		t.Errorf("[secrets] env names it: pass %v, withheld %v", pass, withheld)
	}
}

func TestWithheldHint(t *testing.T) {
	got := withheldHint("the agent exited with status 1", "Missing environment variable: `B_KEY`.", []string{"A_TOKEN", "B_KEY"})
	if !strings.Contains(got, "tine withheld B_KEY from the agent") || !strings.Contains(got, `[secrets] inherit = ["B_KEY"]`) || strings.Contains(got, "A_TOKEN") {
		t.Errorf("named: %s", got)
	}
	if got := withheldHint("x", "", []string{"A_TOKEN"}); !strings.Contains(got, "may have needed") {
		t.Errorf("unnamed: %s", got)
	}
	if got := withheldHint("x", "", nil); got != "x" {
		t.Errorf("none withheld: %s", got)
	}
}

func TestHiddenCredentialNotes(t *testing.T) {
	env := []string{"HOME=/home/ann", "CLAUDE_CONFIG_DIR=/nonexistent", "CLAUDE_CODE_USE_BEDROCK=1"}
	o := &Options{Agent: agent.Config{Kind: agent.Claude}}
	notes := hiddenCredentialNotes(o, env, "/home/ann", "/srv/app")
	if len(notes) != 1 || !strings.Contains(notes[0], `[secrets] inherit = ["~/.aws"]`) {
		t.Errorf("bedrock with ~/.aws hidden: %q", notes)
	}
	o.Secrets = config.Secrets{Inherit: []string{"~/.aws"}}
	if notes := hiddenCredentialNotes(o, env, "/home/ann", "/srv/app"); len(notes) != 0 {
		t.Errorf("~/.aws inherited: %q", notes)
	}
}
