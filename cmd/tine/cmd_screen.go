package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/runtime"
)

// screenShot is what tine screen --json prints: where the PNG went.
type screenShot struct {
	Run   string `json:"run"`
	File  string `json:"file"`
	Bytes int    `json:"bytes"`
}

func newScreen(a *app) *cobra.Command {
	var out string
	var asJSON bool
	c := &cobra.Command{
		Use:   "screen RUN",
		Short: "Take a screenshot of a run's display (PNG)",
		Long: `Writes a PNG of RUN's display as it is now to -o FILE, or to standard output
when that is not a terminal. RUN must be running with a display ([display]
enabled = true in tine.toml, or tine start --display). Exit status 5 when it
has none. With --json the PNG goes to -o FILE, and where it went is printed.`,
		Example: `  tine screen source-1 -o source-1.png
  tine screen source-1 > shot.png`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" && isTerminal(a.stdout) {
				return usageErr(c, "a PNG goes to a file: give -o FILE or redirect the output")
			}
			if asJSON && (out == "" || out == "-") {
				return usageErr(c, "with --json the PNG goes to a file: give -o FILE")
			}
			var png []byte
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				s, err := cl.Screen(c.Context(), remoteRef(c.Context(), cl, args[0]))
				png = s.PNG
				return err
			}, func(e *engine.Engine) (err error) {
				png, err = runtime.Of(e).Screen(c.Context(), args[0])
				return err
			})
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = a.stdout.Write(png)
				return err
			}
			if err := atomicfile.Write(out, png, 0o644); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(screenShot{Run: args[0], File: out, Bytes: len(png)})
			}
			fmt.Fprintf(a.stderr, "wrote %s (%d bytes)\n", out, len(png))
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "write the PNG to `FILE` (- for standard output)")
	c.Flags().BoolVar(&asJSON, "json", false, "print where the PNG went, as JSON (with -o FILE)")
	return c
}

func newInput(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "input RUN (click X Y | move X Y | type TEXT | key KEY)",
		Short: "Click, move the pointer, type or press a key on a run's display",
		Long: `Performs one action on RUN's display, through xdotool inside RUN: click X Y
(the left button at pixel X, Y), move X Y, type TEXT, or key KEY (an X key
name or chord: Return, Tab, ctrl+l). RUN must be running with a display.`,
		Example: `  tine input source-1 click 640 400
  tine input source-1 type 'hello world'
  tine input source-1 key ctrl+l`,
		Args: minArgs(3, "RUN, then click X Y, move X Y, type TEXT or key KEY"),
		RunE: func(c *cobra.Command, args []string) error {
			req, err := inputRequest(args[1:])
			if err != nil {
				return usageErr(c, err.Error())
			}
			err = a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				return cl.Input(c.Context(), remoteRef(c.Context(), cl, args[0]), req)
			}, func(e *engine.Engine) error {
				return runtime.Of(e).Input(c.Context(), args[0], req.Input())
			})
			if err == nil && asJSON {
				return a.printJSON(req)
			}
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the action done, as JSON")
	return c
}

// inputRequest parses the words of tine input after RUN.
func inputRequest(words []string) (httpapi.InputRequest, error) {
	req := httpapi.InputRequest{Action: words[0]}
	switch req.Action {
	case "click", "move":
		if len(words) != 3 {
			return req, fmt.Errorf("%s takes X and Y", req.Action)
		}
		x, errX := strconv.Atoi(words[1])
		y, errY := strconv.Atoi(words[2])
		if errX != nil || errY != nil || x < 0 || y < 0 {
			return req, fmt.Errorf("%s %s %s: X and Y are pixels, 0 or more", req.Action, words[1], words[2])
		}
		req.X, req.Y = x, y
	case "type", "key":
		if len(words) != 2 {
			return req, fmt.Errorf("%s takes one argument (quote it)", req.Action)
		}
		req.Text = words[1]
	default:
		return req, fmt.Errorf("%q: use click, move, type or key", req.Action)
	}
	return req, nil
}
