// Deterministic records for the pipeline end-to-end tests (shared by the test and its
// child processes, Node and Deno).
const WAREHOUSES = ['AMS', 'BER', 'LIS', 'WAW', 'OSL'];

/** Inventory record `seq` (about 120 bytes of NDJSON); `qty` sums to a checksum. */
export function inventory(seq) {
  return {
    seq,
    sku: `SKU-${seq.toString(36).padStart(6, '0')}`,
    warehouse: WAREHOUSES[seq % WAREHOUSES.length],
    qty: (seq * 7919) % 1000,
    priceCents: 100 + ((seq * 104729) % 99_900),
    updatedAt: '2026-11-02T08:00:00Z',
  };
}

/** Sum of inventory(seq).qty for seq in 0..n-1. */
export function inventoryQtySum(n) {
  let s = 0;
  for (let seq = 0; seq < n; seq++) s += (seq * 7919) % 1000;
  return s;
}

/** FNV-1a of a string (the test's deterministic "transient failure" choice). */
export function fnv1a(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 0x01000193); }
  return h >>> 0;
}
