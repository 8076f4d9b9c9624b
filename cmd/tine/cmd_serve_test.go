package main

import "testing"

func TestServe_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"serve", "x"}, exitUsage, "serve takes 0 argument(s), got 1"},
	})
}
