// Package hook answers the lifecycle hooks of coding agents (Claude Code,
// Codex) running inside tine runs, and installs those hooks into the
// agents' settings.
//
// An agent runs `tine hook claude|codex` with one event as JSON on stdin.
// [Parse] turns it into a neutral [Event]; [Decide] answers it for the run
// named by the environment ([EnvFromOS]: TINE_RUN, TINE_ROLE,
// TINE_EVIDENCE); [Render] prints the answer in the agent's own format.
//
//   - PreToolUse (Bash): the command goes through [classify.Command] with
//     the run's role. Fork-worthy work in a source is denied with a message
//     asking the agent to request forks (tine fork-self ...); external
//     effects are denied in every role; everything else is left to the
//     agent (no output, so its own permission rules still apply).
//   - PostToolUse, PostToolUseFailure (Bash): the call is recorded as
//     evidence, flagged when it looks like a test run.
//   - UserPromptSubmit: an explicit choice typed by the person ("approve
//     ID", "merge RUN", "pick fork 2") is recorded as an approval choice;
//     the prompt's classifier hints are recorded too.
//   - Stop: the turn is recorded as stopped, the stable mark after which a
//     fork requested from inside may be carried out.
//
// Outside a tine run (no TINE_RUN), [Env].Host may find the run the agent's
// working directory belongs to (a managed workspace on the host is its
// source run), and the event is decided as inside that run; anywhere else
// every event is answered with nothing: a hook must never get in an
// agent's way where tine is not in charge.
//
// [Install] and [Uninstall] merge tine's hook entries into a Claude Code
// settings.json or a Codex config.toml, keeping everything else; for
// Codex they also record tine's hooks as trusted, as Codex's own /hooks
// review would.
package hook
