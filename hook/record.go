package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/tinehq/tine/classify"
)

// Recorder keeps what hooks learn: evidence, approval choices and stable
// turn marks. The daemon will provide one; [FileRecorder] appends to a
// file meanwhile.
type Recorder interface {
	// Record stores data (a JSON-encodable value) under kind, one of the
	// Record* constants.
	Record(ctx context.Context, kind string, data any) error
}

// The kinds of record Decide makes.
const (
	// RecordApprovalChoice is a choice a person typed as a prompt.
	RecordApprovalChoice = "approval_choice"
	// RecordPromptHints are the classifier's hints from a prompt.
	RecordPromptHints = "prompt_hints"
	// RecordToolCall is a finished tool call (evidence).
	RecordToolCall = "tool_call"
	// RecordDenied is a tool call the hook denied.
	RecordDenied = "tool_denied"
	// RecordTurnStarted marks that the agent's turn began (a prompt was
	// submitted): forks it asks for wait until the turn stops.
	RecordTurnStarted = "turn_started"
	// RecordTurnStopped is the stable mark: the agent's turn ended.
	RecordTurnStopped = "turn_stopped"
	// RecordHookError is an event the hook could not read.
	RecordHookError = "hook_error"
)

// Env is where a hook runs: the run and its role, and where to record.
type Env struct {
	// Run is the run's name; empty means outside tine.
	Run string
	// Role is the run's role; anything but [classify.Fork] is treated as
	// the source, the stricter role.
	Role classify.Role
	// Prompt is the person's latest prompt, when the caller knows it; its
	// hints sharpen the classification of commands.
	Prompt string
	// Recorder receives records; nil records nothing.
	Recorder Recorder
	// Host, when set, finds the run a hook outside every run acts for,
	// from the agent's working directory: an agent started on the host in
	// a managed workspace (or a fork's view) gets the decisions it would
	// get inside that run. It reports false for a directory no run
	// manages.
	Host func(ctx context.Context, dir string) (Env, bool)
	// OnHost says that the agent runs on the host, outside the run Run
	// names (found through Host): the commands that work only inside a
	// run (tine fork-self, tine effect) are not what it is told to use.
	OnHost bool
}

// forEvent returns env itself inside a run, else the run the host finds
// for the event's working directory (the process's when the event has
// none), else env.
func (e Env) forEvent(ctx context.Context, ev Event) Env {
	if e.Inside() || e.Host == nil {
		return e
	}
	dir := ev.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if dir == "" {
		return e
	}
	if h, ok := e.Host(ctx, dir); ok && h.Inside() {
		if h.Role != classify.Fork {
			h.Role = classify.Source
		}
		h.OnHost = true
		return h
	}
	return e
}

// Inside reports whether the hook runs inside a tine run.
func (e Env) Inside() bool { return e.Run != "" }

// Environment variables read by [EnvFromOS].
const (
	EnvRun      = "TINE_RUN"      // the run's name, set inside every run
	EnvRole     = "TINE_ROLE"     // source or fork
	EnvEvidence = "TINE_EVIDENCE" // a JSON-lines file for records (optional)
)

// EnvFromOS reads the run from TINE_RUN and TINE_ROLE and, when
// TINE_EVIDENCE names a file, records to it.
func EnvFromOS() Env {
	e := Env{Run: os.Getenv(EnvRun), Role: classify.Role(os.Getenv(EnvRole))}
	if e.Role != classify.Fork {
		e.Role = classify.Source
	}
	if p := os.Getenv(EnvEvidence); p != "" && e.Inside() {
		e.Recorder = &FileRecorder{Path: p, Run: e.Run}
	}
	return e
}

// FileRecorder appends one JSON object per record to a file:
// {"time":..., "run":..., "kind":..., "data":...}.
type FileRecorder struct {
	// Path is the file, created (mode 0600) on the first record.
	Path string
	// Run names the run in every line.
	Run string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

var _ Recorder = (*FileRecorder)(nil)

// Record appends one line. Lines are written with one write to a file
// opened for appending, so concurrent hooks do not interleave them.
func (f *FileRecorder) Record(_ context.Context, kind string, data any) error {
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	line, err := json.Marshal(struct {
		Time time.Time `json:"time"`
		Run  string    `json:"run,omitempty"`
		Kind string    `json:"kind"`
		Data any       `json:"data,omitempty"`
	}{now().UTC(), f.Run, kind, data})
	if err != nil {
		return fmt.Errorf("recording %s: %w", kind, err)
	}
	file, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("recording %s: %w", kind, err)
	}
	_, err = file.Write(append(line, '\n'))
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("recording %s: %w", kind, err)
	}
	return nil
}
