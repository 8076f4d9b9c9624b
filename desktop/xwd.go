package desktop

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math/bits"
)

// xwdHeader is the fixed part of an XWD file (X11's XWDFileHeader), 25
// big-endian 32-bit fields.
type xwdHeader struct {
	HeaderSize, Version, Format, Depth, Width, Height, XOffset uint32
	ByteOrder, BitmapUnit, BitOrder, BitmapPad, BitsPerPixel   uint32
	BytesPerLine, VisualClass, RedMask, GreenMask, BlueMask    uint32
	BitsPerRGB, ColormapEntries, NColors                       uint32
	WindowWidth, WindowHeight, WindowX, WindowY, BorderWidth   uint32
}

const (
	xwdVersion  = 7
	xwdZPixmap  = 2
	xwdHeaderSz = 100
	maxSide     = 8192 // config.MaxDisplaySide
)

// ErrXWD means a screen dump is not one DecodeXWD reads: xwd's format,
// version 7, a ZPixmap of 24 or 32 bits a pixel with colour masks (a
// TrueColor or DirectColor visual, as every run's X server has).
var ErrXWD = errors.New("not a true-colour XWD screen dump")

// DecodeXWD reads a screen dump in xwd's format (xwd -root) into an image.
// The dump comes from a program in a run, so it is checked whole before
// anything is made of it: a header that claims more pixels than b holds is
// refused before the image is allocated.
func DecodeXWD(b []byte) (image.Image, error) {
	var h xwdHeader
	if err := binary.Read(bytes.NewReader(b), binary.BigEndian, &h); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrXWD, err)
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	// The window's name, then the colour map, which a true-colour image
	// does not need, then the rows.
	off := uint64(h.HeaderSize) + uint64(h.NColors)*12
	if need := off + uint64(h.BytesPerLine)*uint64(h.Height); uint64(len(b)) < need {
		return nil, fmt.Errorf("%w: %d bytes, the header says %d", ErrXWD, len(b), need)
	}
	img := image.NewNRGBA(image.Rect(0, 0, int(h.Width), int(h.Height)))
	for y := range int(h.Height) {
		start := off + uint64(y)*uint64(h.BytesPerLine)
		h.row(img, y, b[start:start+uint64(h.BytesPerLine)])
	}
	return img, nil
}

func (h *xwdHeader) check() error {
	switch {
	case h.Version != xwdVersion || h.Format != xwdZPixmap:
		return fmt.Errorf("%w: version %d, format %d", ErrXWD, h.Version, h.Format)
	case h.BitsPerPixel != 24 && h.BitsPerPixel != 32:
		return fmt.Errorf("%w: %d bits a pixel", ErrXWD, h.BitsPerPixel)
	case h.RedMask == 0 || h.GreenMask == 0 || h.BlueMask == 0:
		return fmt.Errorf("%w: no colour masks", ErrXWD)
	case h.Width == 0 || h.Height == 0 || h.Width > maxSide || h.Height > maxSide:
		return fmt.Errorf("%w: %dx%d", ErrXWD, h.Width, h.Height)
	case h.HeaderSize < xwdHeaderSz || h.HeaderSize > 1<<16 || h.NColors > 1<<16:
		return fmt.Errorf("%w: header of %d bytes, %d colours", ErrXWD, h.HeaderSize, h.NColors)
	case uint64(h.BytesPerLine) < uint64(h.Width)*uint64(h.BitsPerPixel/8) || h.BytesPerLine > 4*maxSide+64:
		return fmt.Errorf("%w: %d bytes a line for %d pixels", ErrXWD, h.BytesPerLine, h.Width)
	}
	return nil
}

// row decodes one line of pixels into img's row y.
func (h *xwdHeader) row(img *image.NRGBA, y int, line []byte) {
	n := int(h.BitsPerPixel / 8)
	for x := 0; x < int(h.Width); x++ {
		p := line[x*n : x*n+n]
		var v uint32
		for i := range n {
			if h.ByteOrder == 0 { // least significant byte first
				v |= uint32(p[i]) << (8 * i)
			} else {
				v = v<<8 | uint32(p[i])
			}
		}
		img.SetNRGBA(x, y, color.NRGBA{channel(v, h.RedMask), channel(v, h.GreenMask), channel(v, h.BlueMask), 0xff})
	}
}

// channel is the 8-bit value of the colour under mask in pixel v.
func channel(v, mask uint32) uint8 {
	c := (v & mask) >> bits.TrailingZeros32(mask)
	width := bits.OnesCount32(mask)
	switch {
	case width >= 8:
		return uint8(c >> (width - 8))
	default:
		return uint8(c << (8 - width))
	}
}
