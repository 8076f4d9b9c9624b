package main

import "testing"

func TestDiscard_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"discard"}, exitUsage, "discard takes one or more RUN or GROUP"},
		{[]string{"discard", "a", "--unmerged=maybe"}, exitUsage, "not true or false"},
		{[]string{"discard", "a", "--force=maybe"}, exitUsage, "not true or false"},
	})
}
