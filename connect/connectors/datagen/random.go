package datagen

import "math"

// Every random choice is made by this file's code alone, not by a
// library whose output may change between versions: a seed means the
// same data for good.

// rng is a splitmix64 stream.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// float returns a number in [0, 1).
func (r *rng) float() float64 { return unit(r.next()) }

// intn returns a number in [0, n).
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// hash mixes values into one well-spread number. The random traits of a
// thing (a product's price, a week's promotions, one sale) are hashes of
// the seed, a tag and the thing's identity, so each can be computed
// without the others: that is what lets a generator seek.
func hash(vals ...uint64) uint64 {
	h := uint64(0x243f6a8885a308d3)
	for _, v := range vals {
		h = mix((h + 0x9e3779b97f4a7c15) ^ v)
	}
	return h
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// normal maps two hashes to a standard normal number (Box-Muller).
func normal(h1, h2 uint64) float64 {
	u1 := 1 - unit(h1) // (0, 1]
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*unit(h2))
}

// Tags keep the hashes of different traits apart.
const (
	tagStoreSize uint64 = iota + 1
	tagRank
	tagPrice
	tagPriceShape
	tagLead
	tagPack
	tagPromo
	tagDiscount
	tagBurst
	tagSale
	tagPhase
	tagDelivery
	tagUser
	tagPageview
)

// pick returns the index i of cum (ascending cumulative weights) with
// cum[i-1] ≤ x·total < cum[i].
func pick(cum []float64, x float64) int {
	target := x * cum[len(cum)-1]
	lo, hi := 0, len(cum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if cum[mid] > target {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// round2 rounds to cents.
func round2(v float64) float64 { return math.Round(v*100) / 100 }
