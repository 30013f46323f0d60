package retail

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Sale is a record of the sales topic: the value the datagen connector's
// retail.sales schema writes (and the point-of-sale endpoint takes).
// Its key is "store_id:product_id".
type Sale struct {
	SaleID    string  `json:"sale_id"`
	TS        int64   `json:"ts"`
	StoreID   string  `json:"store_id"`
	ProductID string  `json:"product_id"`
	Quantity  int64   `json:"quantity"`
	UnitPrice float64 `json:"unit_price"`
	ListPrice float64 `json:"list_price"`
	Promotion bool    `json:"promotion"`
}

// Shipment is a record of the shipments topic (datagen's
// retail.shipments): a delivery to a store.
type Shipment struct {
	ShipmentID      string `json:"shipment_id"`
	OrderID         string `json:"order_id"`
	TS              int64  `json:"ts"`
	OrderedAt       int64  `json:"ordered_at"`
	StoreID         string `json:"store_id"`
	ProductID       string `json:"product_id"`
	Quantity        int64  `json:"quantity"`
	OrderedQuantity int64  `json:"ordered_quantity"`
}

// Reorder is a record of the reorders topic: an order to the supplier
// for a store's product, made when its stock fell to the reorder point.
type Reorder struct {
	ReorderID string `json:"reorder_id"` // key@ts
	TS        int64  `json:"ts"`
	StoreID   string `json:"store_id"`
	ProductID string `json:"product_id"`
	Quantity  int64  `json:"quantity"`
	Stock     int64  `json:"stock"`
	// ReorderPoint is velocity × lead time + safety stock, rounded up.
	ReorderPoint int64 `json:"reorder_point"`
	// Velocity is the units sold in the last hopping window.
	Velocity int64 `json:"velocity"`
}

// PriceChange is a record of the price adjustments topic.
type PriceChange struct {
	TS        int64  `json:"ts"`
	StoreID   string `json:"store_id"`
	ProductID string `json:"product_id"`
	// Prices in cents; the new one is the list price times the factor.
	OldCents  int64  `json:"old_cents"`
	NewCents  int64  `json:"new_cents"`
	ListCents int64  `json:"list_cents"`
	Reason    string `json:"reason"` // "markdown" or "raise"
	Stock     int64  `json:"stock"`
	Velocity  int64  `json:"velocity"`
}

// Stock is a record of the stock topic (compacted: the latest per key is
// a table of stock per store and product), written after every sale and
// shipment.
type Stock struct {
	TS        int64  `json:"ts"`
	StoreID   string `json:"store_id"`
	ProductID string `json:"product_id"`
	Stock     int64  `json:"stock"`
	Velocity  int64  `json:"velocity"`
	LostSales int64  `json:"lost_sales"` // units asked for with none on hand, so far
	PriceCts  int64  `json:"price_cents"`
	OnOrder   bool   `json:"on_order"`
}

// The reasons of a price change.
const (
	ReasonMarkdown = "markdown"
	ReasonRaise    = "raise"
)

// SplitKey splits a "store_id:product_id" key.
func SplitKey(key string) (store, product string, ok bool) {
	return strings.Cut(key, ":")
}

// WatermarkHeader marks a watermark record: a promise from the producer
// that no later record on this partition has a timestamp below the
// header's value (decimal epoch milliseconds). The generator writes one
// to every partition of both input topics as simulated time passes, and
// one of math.MaxInt64 at the end of a finite run, so that the app can
// process sales and shipments in timestamp order without waiting on the
// wall clock.
const WatermarkHeader = "runnel-watermark"

// EndOfInput is the watermark that releases everything.
const EndOfInput = math.MaxInt64

// watermarkOf returns the watermark a record carries, if it is one.
func watermarkOf(headers []kgo.RecordHeader) (int64, bool, error) {
	for _, h := range headers {
		if h.Key == WatermarkHeader {
			wm, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return 0, true, fmt.Errorf("retail: bad %s header %q", WatermarkHeader, h.Value)
			}
			return wm, true, nil
		}
	}
	return 0, false, nil
}

// Output is what the app's processor emits: one of its fields is set. It
// encodes as that record.
type Output struct {
	Stock   *Stock
	Reorder *Reorder
	Price   *PriceChange
}

func (o Output) MarshalJSON() ([]byte, error) {
	switch {
	case o.Stock != nil:
		return json.Marshal(o.Stock)
	case o.Reorder != nil:
		return json.Marshal(o.Reorder)
	default:
		return json.Marshal(o.Price)
	}
}
