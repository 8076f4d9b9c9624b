package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/httpapi"
)

// Every option engine and forkrun name in their messages, said as the
// flag that sets it.
func TestFlagOf(t *testing.T) {
	for o, want := range map[tine.Option]string{
		tine.Opt("copies"): "--copies", tine.Opt("into"): "--into", tine.Opt("force"): "--unmerged",
		tine.Opt("paths"): "--paths", tine.Opt("commits"): "--commits", tine.Opt("name"): "--name",
		tine.Opt("backend"): "--backend", tine.Opt("take"): "--take", tine.Opt("write"): "--write",
		tine.Opt("net"): "--net", tine.Opt("path"): "--path", tine.Opt("session"): "--session",
		tine.Opt("fresh"): "--fresh", tine.Opt("parallel"): "--parallel", tine.Opt("agent"): "--agent",
		tine.Opt("scope", "git"): "--git", tine.Opt("scope", "filesystem"): "--filesystem", tine.Opt("scope", "paths"): "--paths",
		tine.Opt("live", "ptrace"): "--live=ptrace", tine.Opt("drop_source_changes"): "--drop-source-changes",
		tine.Opt("allow_secrets"): "--allow-secrets", tine.Opt("agent_cmd"): "--agent-cmd",
		tine.Opt("stop_when_confident"): "--stop-when-confident", tine.Opt("holdout"): "--holdout-test",
		tine.Opt("regression"): "--regression-test", tine.Opt("holdout_dir"): "--holdout-dir", tine.Opt("prompt"): "--prompt or --prompt-file",
	} {
		if got := flagOf(o, tine.ErrUnmerged); got != want {
			t.Errorf("flagOf(%s) = %q, want %q", o, got, want)
		}
	}
}

// The CLI says an option as its flag, whether the error is the engine's
// own or came back from the daemon; the API's words stay the API's.
func TestMessage_NamesFlags(t *testing.T) {
	local := fmt.Errorf("discard source-2: %w", tine.Optionf("not discarding: %s never merged or promoted; use %s to discard anyway: %w", "source-2", tine.Opt("force"), tine.ErrUnmerged))
	const api = "discard source-2: not discarding: source-2 never merged or promoted; use force to discard anyway: unmerged changes"
	const cli = "discard source-2: not discarding: source-2 never merged or promoted; use --unmerged to discard anyway: unmerged changes"
	if local.Error() != api {
		t.Fatalf("Error() = %q, want the API's words %q", local.Error(), api)
	}
	if got := message(local); got != cli {
		t.Errorf("message = %q, want %q", got, cli)
	}
	b, _ := json.Marshal(httpapi.Error{Error: local.Error(), Code: "unmerged", Parts: tine.OptionParts(local)})
	remote := httpapi.AnswerError("409 Conflict", b)
	if got := message(remote); got != cli || !errors.Is(remote, tine.ErrUnmerged) || exitCode(remote) != exitUnmerged {
		t.Errorf("through the daemon: %q (exit %d), want %q (exit %d)", got, exitCode(remote), cli, exitUnmerged)
	}
	if got := message(errors.New("plain --x")); got != "plain --x" {
		t.Errorf("message of a plain error = %q", got)
	}
}

// The API's one force is said as the flag for what the refusal would
// override: commands running in the target, or work never merged.
func TestMessage_ForceByWhatItOverrides(t *testing.T) {
	busy := tine.Optionf("2 process(es) run in source (%v); wait for them or use %s: %w", []int{7, 8}, tine.Opt("force"), tine.ErrBusy)
	if got, want := message(busy), "2 process(es) run in source ([7 8]); wait for them or use --while-running: busy"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	unmerged := tine.Optionf("not releasing: use %s: %w", tine.Opt("force"), tine.ErrUnmerged)
	if got, want := message(unmerged), "not releasing: use --unmerged: unmerged changes"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}
