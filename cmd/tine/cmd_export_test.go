package main

import "testing"

func TestExport_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"export"}, exitUsage, "export takes 1 argument(s)"},
		{[]string{"export", "g", "--format", "xml"}, exitUsage, "--format is md or json"},
	})
}
