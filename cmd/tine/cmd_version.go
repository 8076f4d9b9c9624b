package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/internal/buildinfo"
)

func newVersion(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print tine's version and the commit it was built from",
		Long: `Prints the version of tine's module in this binary and, for a build from a
checkout, the commit, its time and whether the checkout had uncommitted
changes; then the Go toolchain. tine --version prints the same line.`,
		Example: `  tine version
  tine version --json`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			in := buildinfo.Read()
			if asJSON {
				return a.printJSON(struct {
					buildinfo.Info
					Short string `json:"short"`
				}{in, in.Short()})
			}
			fmt.Fprintln(a.stdout, in)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
