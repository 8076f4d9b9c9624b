package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// deprecatedKey is the annotation of a deprecated flag: what to use instead.
const deprecatedKey = "tine_deprecated"

// deprecate hides flag name of c from its help and has warnDeprecated say
// what to use instead when it is given. It is not cobra's MarkDeprecated,
// which prints its notice on standard output, into --json's output.
func deprecate(c *cobra.Command, name, instead string) {
	c.Flags().Lookup(name).Hidden = true
	c.Flags().SetAnnotation(name, deprecatedKey, []string{instead})
}

// deprecatedForce keeps --force working on c for one more release: it said
// "even while a command runs" on merge and "even if unmerged" on discard
// and release, and now each has a flag that says what it overrides.
func deprecatedForce(c *cobra.Command, force *bool, use string) {
	c.Flags().BoolVar(force, "force", false, "deprecated: use "+use)
	deprecate(c, "force", "use "+use)
}

// warnDeprecated says on w, a line each, which deprecated flags of c were
// given and what to use instead.
func warnDeprecated(c *cobra.Command, w io.Writer) {
	c.Flags().Visit(func(f *pflag.Flag) {
		if instead := f.Annotations[deprecatedKey]; len(instead) > 0 {
			fmt.Fprintf(w, "tine: warning: --%s is deprecated and goes away in the next release; %s\n", f.Name, instead[0])
		}
	})
}
