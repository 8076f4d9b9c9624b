package mcp

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/httpapi"
)

// ScreenshotInput is the input of screenshot.
type ScreenshotInput struct {
	Run string `json:"run,omitempty" jsonschema:"the run whose display to look at (id, WORKSPACE/NAME or name); default: the run this server runs in"`
}

// ComputerInput is the input of computer: an action on a run's display,
// in the shape of Anthropic's computer-use tool.
type ComputerInput struct {
	Run        string `json:"run,omitempty" jsonschema:"the run whose display to drive; default: the run this server runs in"`
	Action     string `json:"action" jsonschema:"screenshot, left_click, mouse_move, type or key"`
	Coordinate []int  `json:"coordinate,omitempty" jsonschema:"left_click and mouse_move: [x, y] in pixels from the display's top left"`
	Text       string `json:"text,omitempty" jsonschema:"type: the text; key: the key or chord (Return, ctrl+l)"`
}

// Actions of computer, as Anthropic's computer-use tool names them, and
// tine input's word for each.
var computerActions = map[string]string{
	"left_click": "click",
	"mouse_move": "move",
	"type":       "type",
	"key":        "key",
}

const (
	screenshotDesc = `A screenshot (PNG) of a run's display (tine screen): the run's own X display, where its display services (a browser on its dev server) draw. ` +
		`The run must have a display ([display] enabled = true in tine.toml, or tine start --display).`
	computerDesc = `Drive a run's display (tine input), as Anthropic's computer-use tool: action screenshot, left_click or mouse_move at coordinate [x, y], type text, or key (Return, ctrl+l). ` +
		`From inside a run only the run's own display and its forks' are in reach. Take a screenshot after an action to see what it did.`
)

func computerSchema() *jsonschema.Schema {
	return schemaFor[ComputerInput](func(p map[string]*jsonschema.Schema) {
		p["action"].Enum = []any{"screenshot", "left_click", "mouse_move", "type", "key"}
		p["coordinate"].MinItems, p["coordinate"].MaxItems = ptr(2), ptr(2)
	})
}

func (t *tools) addDesktopTools(s *sdk.Server) {
	add(s, &sdk.Tool{Name: "screenshot", Description: screenshotDesc, Annotations: readOnly("Screenshot")}, t.screenshot)
	add(s, &sdk.Tool{Name: "computer", Description: computerDesc, InputSchema: computerSchema(),
		Annotations: &sdk.ToolAnnotations{Title: "Drive a display", DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}}, t.computer)
}

func (t *tools) screenshot(ctx context.Context, in ScreenshotInput) (*answer, error) {
	run, err := t.runOrSelf(in.Run)
	if err != nil {
		return nil, err
	}
	s, err := t.api.Screen(ctx, run)
	if err != nil {
		return nil, unreachable(err)
	}
	return &answer{Note: fmt.Sprintf("the display of %s", s.Run), Image: s.PNG}, nil
}

func (t *tools) computer(ctx context.Context, in ComputerInput) (*answer, error) {
	if in.Action == "screenshot" {
		return t.screenshot(ctx, ScreenshotInput{Run: in.Run})
	}
	run, err := t.runOrSelf(in.Run)
	if err != nil {
		return nil, err
	}
	req, err := computerRequest(in)
	if err != nil {
		return nil, err
	}
	if err := t.api.Input(ctx, run, req); err != nil {
		return nil, unreachable(err)
	}
	return &answer{Note: fmt.Sprintf("%s done on the display of %s; take a screenshot to see it", in.Action, run)}, nil
}

// computerRequest turns a computer action into tine input's request.
func computerRequest(in ComputerInput) (httpapi.InputRequest, error) {
	action, ok := computerActions[in.Action]
	if !ok {
		return httpapi.InputRequest{}, inputErr("action %q: use screenshot, left_click, mouse_move, type or key", in.Action)
	}
	req := httpapi.InputRequest{Action: action, Text: in.Text}
	if action == "click" || action == "move" {
		if len(in.Coordinate) != 2 {
			return req, inputErr("%s needs coordinate [x, y]", in.Action)
		}
		req.X, req.Y = in.Coordinate[0], in.Coordinate[1]
	}
	return req, nil
}
