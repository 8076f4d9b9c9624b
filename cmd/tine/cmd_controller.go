package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
)

// newController is what is left of tine controller: the TineTask
// controller is the tine-controller binary now, so that tine links none
// of Kubernetes' client (docs/architecture.md). A command line or a
// manifest of before fails saying where it went, not "unknown command".
func newController(*app) *cobra.Command {
	return &cobra.Command{
		Use:                "controller",
		Short:              "Moved: the TineTask controller is tine-controller",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("the TineTask controller is a binary of its own now: run tine-controller, with the same flags: %w", tine.ErrInvalid)
		},
	}
}
