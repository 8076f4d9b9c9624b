// Command gen writes a synthetic source tree for benchmarks: many small
// text files spread over nested directories plus a few large ones, with a
// fixed total size, the same bytes for the same flags on every run.
//
//	go run ./bench/gen -dir /var/tmp/ws -files 50000 -bytes 500000000
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// config says what tree to write.
type config struct {
	dir        string
	files      int
	bytes      int64
	largeFrac  float64 // share of the bytes held by large files
	largeEvery int     // one file in largeEvery is large
	perDir     int     // files per leaf directory
	seed       uint64
}

// file is one file to write: its path, size and where its bytes start in
// the shared pool.
type file struct {
	path string
	size int64
	off  int64
}

func main() {
	var c config
	flag.StringVar(&c.dir, "dir", "", "directory to create (must not exist or be empty)")
	flag.IntVar(&c.files, "files", 50000, "number of files")
	flag.Int64Var(&c.bytes, "bytes", 500_000_000, "total size of the files in bytes")
	flag.Float64Var(&c.largeFrac, "large-frac", 0.4, "share of the bytes held by large files")
	flag.IntVar(&c.largeEvery, "large-every", 500, "one file in this many is large")
	flag.IntVar(&c.perDir, "per-dir", 50, "files per leaf directory")
	flag.Uint64Var(&c.seed, "seed", 1, "random seed")
	flag.Parse()
	if c.dir == "" || c.files < 1 || c.bytes < int64(c.files) || c.largeEvery < 2 || c.perDir < 1 {
		fmt.Fprintln(os.Stderr, "gen: need -dir, -files >= 1, -bytes >= -files, -large-every >= 2, -per-dir >= 1")
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	pool := textPool(c.seed, 16<<20)
	files := plan(c, int64(len(pool)))
	dirs := map[string]bool{}
	for _, f := range files {
		dirs[filepath.Dir(f.path)] = true
	}
	for d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return writeAll(files, pool)
}

// plan lays out c.files files totalling exactly c.bytes: every
// c.largeEvery-th file is large and together they hold c.largeFrac of the
// bytes; small files vary from a tenth to 1.9 times their mean size.
func plan(c config, poolLen int64) []file {
	rng := rand.New(rand.NewPCG(c.seed, 0x7a11))
	nLarge := c.files / c.largeEvery
	nSmall := c.files - nLarge
	largeBytes := int64(float64(c.bytes) * c.largeFrac)
	if nLarge == 0 {
		largeBytes = 0
	}
	smallMean := (c.bytes - largeBytes) / int64(max(nSmall, 1))
	files := make([]file, c.files)
	var total int64
	small := 0
	for i := range files {
		var size int64
		if nLarge > 0 && i%c.largeEvery == c.largeEvery-1 {
			size = largeBytes / int64(nLarge)
			files[i].path = filepath.Join(c.dir, "assets", fmt.Sprintf("blob%05d.dat", i/c.largeEvery))
		} else {
			size = smallMean/10 + rng.Int64N(smallMean*18/10+1)
			files[i].path = filepath.Join(c.dir, smallPath(small, c.perDir))
			small++
		}
		files[i].size = max(size, 1)
		total += files[i].size
	}
	fix := 0 // land on the exact total: the first large file takes up the slack
	if nLarge > 0 {
		fix = c.largeEvery - 1
	}
	files[fix].size = max(files[fix].size+c.bytes-total, 1)
	for i := range files {
		files[i].off = rng.Int64N(poolLen)
	}
	return files
}

// smallPath names the i-th small file: src/aNN/bNN/fileNNNN.txt, perDir
// files per leaf directory, 20 leaves per middle directory.
func smallPath(i, perDir int) string {
	leaf := i / perDir
	return fmt.Sprintf("src/a%03d/b%02d/file%04d.txt", leaf/20, leaf%20, i%perDir)
}

// textPool returns n bytes of word-like lines, so files look like source
// text (git compresses them as it would code).
func textPool(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x9e37))
	words := []string{"func", "return", "if", "err", "nil", "for", "range", "var", "const", "type",
		"struct", "string", "int", "package", "import", "ctx", "context", "error", "map", "make",
		"len", "append", "go", "defer", "select", "case", "switch", "default", "true", "false"}
	b := make([]byte, 0, n+64)
	for len(b) < n {
		for w := 4 + rng.IntN(10); w > 0; w-- {
			b = append(b, words[rng.IntN(len(words))]...)
			b = append(b, ' ')
		}
		b = append(b, fmt.Sprintf("%d\n", rng.IntN(100000))...)
	}
	return b[:n]
}

// writeAll writes the files with one worker per CPU.
func writeAll(files []file, pool []byte) error {
	ch := make(chan file)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range runtime.NumCPU() * 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range ch {
				if err := writeFile(f, pool); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, f := range files {
		ch <- f
	}
	close(ch)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// writeFile writes f.size bytes taken from the pool, wrapping around.
func writeFile(f file, pool []byte) error {
	out, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	off, left := f.off, f.size
	for left > 0 {
		n := min(left, int64(len(pool))-off)
		if _, err := out.Write(pool[off : off+n]); err != nil {
			out.Close()
			return err
		}
		left -= n
		off = 0
	}
	return out.Close()
}
