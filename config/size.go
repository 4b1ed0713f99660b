package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"rsag/coll"
)

// Size is a byte count. It reads TOML integers and strings with a binary
// suffix ("1K", "256M", "1G" are 1024, 268435456 and 1073741824 bytes), so
// config files and -set values share one parser.
type Size int64

var sizeSuffixes = map[string]int64{"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
	"M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}

// UnmarshalText parses "268435456", "256M" or "1 GiB".
func (s *Size) UnmarshalText(text []byte) error {
	v, err := ParseSize(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSize parses a byte count with an optional K, M or G suffix (powers
// of 1024). It is the one parser of sizes: a number whose value with its
// suffix does not fit in 64 bits is refused on either sign, never wrapped
// ("-18014398509481983K" times 1024 would wrap to 1024). Whether a size is
// positive and within MaxSizeBytes is for the key's check to say.
func ParseSize(text string) (Size, error) {
	t := strings.TrimSpace(text)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	num, suffix := strings.TrimSpace(t[:i]), strings.ToUpper(strings.TrimSpace(t[i:]))
	mult, ok := sizeSuffixes[suffix]
	if !ok || num == "" {
		return 0, fmt.Errorf("%q is not a byte size: write a whole number of bytes, optionally with K, M or G (powers of 1024), e.g. 65536 or \"64K\"", text)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if errors.Is(err, strconv.ErrRange) || n > math.MaxInt64/mult || n < math.MinInt64/mult {
		return 0, fmt.Errorf("%q is out of range for a byte size: a size is positive and at most %s (%d bytes)", text, Size(MaxSizeBytes), int64(MaxSizeBytes))
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a byte size: write a whole number of bytes, optionally with K, M or G (powers of 1024), e.g. 65536 or \"64K\"", text)
	}
	return Size(n * mult), nil
}

// String writes the size the way people read it: 1K, 64K, 256M, or bytes.
func (s Size) String() string { return coll.SizeText(int64(s)) }
