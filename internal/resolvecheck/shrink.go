package resolvecheck

// Shrink removes elements of a failing input one at a time, keeping each
// removal after which fails still reports true, until no single removal
// does or tries calls were made. It returns the smallest input found.
func Shrink[S ~[]T, T any](in S, fails func(S) bool, tries int) S {
	for changed := true; changed && tries > 0; {
		changed = false
		for i := len(in) - 1; i >= 0 && tries > 0; i-- {
			cand := append(append(S(nil), in[:i]...), in[i+1:]...)
			tries--
			if fails(cand) {
				in, changed = cand, true
			}
		}
	}
	return in
}
