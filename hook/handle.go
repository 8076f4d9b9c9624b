package hook

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// MaxInput bounds the event a hook reads; PostToolUse events carry the
// tool's output, which can be large.
const MaxInput = 64 << 20

// Answer is one event, tine's answer and what the process prints.
type Answer struct {
	Event    Event    `json:"event"`
	Response Response `json:"response"`
	Output   Output   `json:"-"`
}

// Handle answers the event in input: [Parse], [Decide], [Render]. Outside
// a run, env.Host (if set) may find the run the event's working directory
// belongs to, and the event is decided as inside it. Input
// that cannot be read is passed with a warning on stderr and exit 0: a
// hook that fails would get in the agent's way on every event, while a
// missed check is recorded (RecordHookError) and visible.
func Handle(ctx context.Context, agent Agent, input []byte, env Env) Answer {
	ev, err := Parse(agent, input)
	if err != nil {
		return unreadable(ctx, agent, env, err)
	}
	env = env.forEvent(ctx, ev)
	r := Decide(ctx, ev, env)
	return Answer{Event: ev, Response: r, Output: Render(agent, ev, r)}
}

// HandleReader is [Handle] for input read from rd, at most [MaxInput]
// bytes.
func HandleReader(ctx context.Context, agent Agent, rd io.Reader, env Env) Answer {
	input, err := io.ReadAll(io.LimitReader(rd, MaxInput+1))
	switch {
	case err != nil:
		return unreadable(ctx, agent, env, fmt.Errorf("reading stdin: %w", err))
	case len(input) > MaxInput:
		return unreadable(ctx, agent, env, errors.New("the event is larger than 64 MiB"))
	}
	return Handle(ctx, agent, input, env)
}

func unreadable(ctx context.Context, agent Agent, env Env, err error) Answer {
	r := Response{Action: Pass, Warnings: []string{err.Error() + "; answering nothing"}}
	if env.Inside() {
		r.record(ctx, env, RecordHookError, struct {
			Agent Agent  `json:"agent"`
			Error string `json:"error"`
		}{agent, err.Error()})
	}
	ev := Event{Agent: agent, Kind: Other}
	return Answer{Event: ev, Response: r, Output: Render(agent, ev, r)}
}
