package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine"
)

// answer is what a tool says: a line for the agent, and the data (a JSON
// object, also sent as structured content) or plain text such as a patch.
type answer struct {
	Note  string
	Data  any
	Text  string
	Image []byte // a PNG, sent as image content after the text
}

// result renders a as one text content: the note, then the text or the
// data as indented JSON; and an image content when it has one.
func (a *answer) result() (*sdk.CallToolResult, error) {
	parts := []string{}
	if a.Note != "" {
		parts = append(parts, a.Note)
	}
	if a.Text != "" {
		parts = append(parts, a.Text)
	}
	if a.Data != nil {
		b, err := json.MarshalIndent(a.Data, "", "  ")
		if err != nil {
			return nil, err
		}
		parts = append(parts, string(b))
	}
	content := []sdk.Content{&sdk.TextContent{Text: strings.Join(parts, "\n\n")}}
	if a.Image != nil {
		content = append(content, &sdk.ImageContent{Data: a.Image, MIMEType: "image/png"})
	}
	return &sdk.CallToolResult{Content: content}, nil
}

// handler is a tool's work on its typed input.
type handler[In any] func(context.Context, In) (*answer, error)

// add registers tool t with h. Every failure of h, from bad input to the
// daemon's refusal, becomes a tool error result (isError) of one line.
func add[In any](s *sdk.Server, t *sdk.Tool, h handler[In]) {
	sdk.AddTool(s, t, func(ctx context.Context, req *sdk.CallToolRequest, in In) (_ *sdk.CallToolResult, _ any, err error) {
		defer func() {
			if p := recover(); p != nil { // an answer not as expected: a tool error, not a dead server
				err = fmt.Errorf("tine mcp: %s: %v", t.Name, p)
			}
		}()
		a, err := h(withProgress(ctx, req), in)
		if err != nil {
			return nil, nil, oneLine(err)
		}
		res, err := a.result()
		if err != nil {
			return nil, nil, oneLine(err)
		}
		out, err := a.structured()
		if err != nil {
			return nil, nil, oneLine(err)
		}
		return res, out, nil
	})
}

// structured is the answer's structured content: its data, with the note
// added as "guidance" when the data is an object. Codex (0.171) passes only
// structuredContent to its model, so what the agent is to do next must be
// there too, not only in the text.
func (a *answer) structured() (any, error) {
	if a.Data == nil || a.Note == "" {
		return a.Data, nil
	}
	b, err := json.Marshal(a.Data)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil || obj == nil {
		return a.Data, nil // not an object: nowhere to put it
	}
	note, _ := json.Marshal(a.Note)
	obj["guidance"] = note
	return obj, nil
}

// oneLine flattens an error's message to a single line, keeping its chain.
func oneLine(err error) error {
	msg := err.Error()
	if !strings.ContainsAny(msg, "\r\n") {
		return err
	}
	flat := strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
	return fmt.Errorf("%s%w", flat, silent{err})
}

// inputErr reports a mistake in a tool's arguments.
func inputErr(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, tine.ErrInvalid)...)
}

// schemaFor infers the input schema of In and lets edit refine its
// properties (bounds and defaults the struct tags cannot say).
func schemaFor[In any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: input schema: %v", err)) // a programming error, caught by the tests
	}
	if edit != nil {
		edit(s.Properties)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// Annotations of the three kinds of tool.
func readOnly(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, OpenWorldHint: ptr(false)}
}

func additive(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
}

func destructive(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}
}

// silent wraps an error without adding to the message.
type silent struct{ err error }

func (s silent) Error() string { return "" }
func (s silent) Unwrap() error { return s.err }
