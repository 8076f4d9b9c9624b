package overlay

// MaxDepth is the deepest stack Seal returns: a version that would have more
// layers is compacted into one whole-tree layer instead. It keeps mount
// option strings well under the kernel's one-page limit and lookups fast.
const MaxDepth = 32

// Backend is the overlay file backend. It needs root (CAP_SYS_ADMIN) on Linux.
type Backend struct {
	maxDepth int
}

// Option configures a Backend.
type Option func(*Backend)

// WithMaxDepth sets the depth past which Seal compacts a version into a
// single layer (default MaxDepth).
func WithMaxDepth(n int) Option { return func(b *Backend) { b.maxDepth = n } }

// New returns an overlay backend.
func New(opts ...Option) *Backend {
	b := &Backend{maxDepth: MaxDepth}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Name returns "overlay".
func (b *Backend) Name() string { return "overlay" }
