package main

import "testing"

func TestRelease_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"release"}, exitUsage, "release takes 1 argument(s), got 0"},
		{[]string{"release", "a", "b"}, exitUsage, "got 2"},
	})
}
