package datagen

import (
	"math"
	"sort"
)

// salesPerStoreDay is how many sales an average store makes on an
// average day; a store's size scales it.
const salesPerStoreDay = 400

// meanQuantity is the mean quantity of a sale line without promotion or
// burst (see saleQuantity).
const meanQuantity = 1.63

// universe is the retail world: stores and products with their traits.
// It depends on the seed and the two sizes only.
type universe struct {
	stores   []store
	products []product
	popTotal float64
}

type store struct {
	id   string
	size float64 // scales the store's sales: 0.6 to 1.6
}

type product struct {
	id         string
	popularity float64 // Zipf-like by a random rank: 1 for the best seller
	price      float64 // list price, like 4.49
	leadDays   int     // the supplier's lead time: 1 to 5 days
	period     int     // days between deliveries to a store: 1, 2, 3 or 7
	casePack   int     // orders are in whole cases
}

func newUniverse(seed uint64, nStores, nProducts int) *universe {
	u := &universe{stores: make([]store, nStores), products: make([]product, nProducts)}
	for s := range u.stores {
		u.stores[s] = store{id: StoreID(s), size: 0.6 + unit(hash(seed, tagStoreSize, uint64(s)))}
	}
	// Popularity follows the product's rank in a random order.
	order := make([]int, nProducts)
	for p := range order {
		order[p] = p
	}
	sort.Slice(order, func(i, j int) bool {
		return hash(seed, tagRank, uint64(order[i])) < hash(seed, tagRank, uint64(order[j]))
	})
	for rank, p := range order {
		pr := &u.products[p]
		pr.id = ProductID(p)
		pr.popularity = 1 / math.Pow(float64(rank+1), 0.8)
		u.popTotal += pr.popularity
		share := float64(rank) / float64(nProducts)
		switch {
		case share < 0.10:
			pr.period = 1
		case share < 0.35:
			pr.period = 2
		case share < 0.65:
			pr.period = 3
		default:
			pr.period = 7
		}
		// Prices are log-normal around 4.50, ending in 9.
		v := math.Exp(math.Log(4.5) + 0.8*normal(hash(seed, tagPrice, uint64(p)), hash(seed, tagPriceShape, uint64(p))))
		v = min(max(v, 0.5), 150)
		pr.price = round2(math.Round(v*10)/10 - 0.01)
		pr.leadDays = 1 + int(hash(seed, tagLead, uint64(p))%5)
		switch {
		case pr.price < 3:
			pr.casePack = 12
		case pr.price < 10:
			pr.casePack = 6
		default:
			pr.casePack = 1 + int(hash(seed, tagPack, uint64(p))%2) // 1 or 2
		}
	}
	return u
}

// dailyDemand is the mean number of units of p a store of size 1 sells a
// day, promotions left out.
func (u *universe) dailyDemand(p int) float64 {
	return salesPerStoreDay * u.products[p].popularity / u.popTotal * meanQuantity
}

// promotion returns the discount of product p in week w of the grid (0:
// none). About one product in twelve is on promotion in a week.
func (u *universe) promotion(seed uint64, p int, w int64) float64 {
	if unit(hash(seed, tagPromo, uint64(p), uint64(w))) >= 1.0/12 {
		return 0
	}
	return []float64{0.1, 0.15, 0.2, 0.25, 0.3, 0.4}[hash(seed, tagDiscount, uint64(p), uint64(w))%6]
}

// promotionLift is how much a discount multiplies a product's demand.
func promotionLift(discount float64) float64 { return 1 + 6*discount }
