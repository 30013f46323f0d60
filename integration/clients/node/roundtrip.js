// roundtrip.js drives kafkajs for integration/compat (TestKafkaJS, TestGroupKafkaJS).
//
//   node roundtrip.js produce|consume  < request.json  > response.json
//
// The request (JSON on stdin): {brokers, topic, codec, records, count, group,
// timeout_ms}. `produce` sends `records` in one send() call with the codec and
// prints {produced: [{partition, offset}]}. `consume` joins consumer group
// `group` (kafkajs has no group-less consumer), reads `count` records from the
// group's committed offsets (the beginning when it has none), commits the
// offsets after them, leaves the group and prints {consumed: [{partition,
// offset, key, value, headers, timestamp}]}. Headers are a list of {key, value} in record order.
// Diagnostics go to stderr; any failure exits non-zero.
'use strict'

const { Kafka, CompressionTypes, CompressionCodecs, Partitioners, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4 = require('lz4js')
const { ZstdCodec } = require('zstd-codec')

const types = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
}

// kafkajs does gzip itself; the other codecs are plugins. Every codec here is
// plain JavaScript, so nothing needs a native build: kafkajs-snappy (snappyjs),
// lz4js (LZ4 frames, as Kafka uses) and zstd-codec (zstd compiled to JS).
// kafkajs-lz4 is not used: it pulls in the `lz4` package, whose native build
// needs node-gyp and whose npm tarball ships macOS binaries.
async function registerCodecs() {
  CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
  CompressionCodecs[CompressionTypes.LZ4] = () => ({
    async compress(encoder) {
      return Buffer.from(lz4.compress(encoder.buffer))
    },
    async decompress(buffer) {
      return Buffer.from(lz4.decompress(buffer))
    },
  })
  const zstd = await new Promise(resolve => ZstdCodec.run(z => resolve(new z.Simple())))
  CompressionCodecs[CompressionTypes.ZSTD] = () => ({
    async compress(encoder) {
      return Buffer.from(zstd.compress(encoder.buffer))
    },
    async decompress(buffer) {
      return Buffer.from(zstd.decompress(buffer))
    },
  })
}

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = []
    process.stdin.on('data', c => chunks.push(c))
    process.stdin.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))))
    process.stdin.on('error', reject)
  })
}

function withTimeout(promise, ms, what) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

// kafkajs takes headers as an object; a repeated key is an array value, and
// its entries follow each other. The tests only repeat keys adjacently.
function toHeaders(list) {
  const out = {}
  for (const { key, value } of list) {
    if (key in out) {
      out[key] = [].concat(out[key], value)
    } else {
      out[key] = value
    }
  }
  return out
}

function fromHeaders(obj) {
  const out = []
  for (const [key, value] of Object.entries(obj || {})) {
    for (const v of [].concat(value)) {
      out.push({ key, value: v === null || v === undefined ? '' : v.toString('utf8') })
    }
  }
  return out
}

async function produce(kafka, req) {
  // Records name their partition, so the partitioner never runs; naming
  // one silences kafkajs's warning about its v2 default.
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  try {
    const meta = await producer.send({
      topic: req.topic,
      acks: -1,
      compression: types[req.codec],
      messages: req.records.map(r => ({
        partition: r.partition,
        key: r.key,
        value: r.value,
        headers: toHeaders(r.headers),
        timestamp: String(r.timestamp),
      })),
    })
    // One send to one partition: one acknowledgement with the base offset.
    if (meta.length !== 1) throw new Error(`send answered ${JSON.stringify(meta)}`)
    const base = Number(meta[0].baseOffset)
    return { produced: req.records.map((_, i) => ({ partition: meta[0].partition, offset: base + i })) }
  } finally {
    await producer.disconnect()
  }
}

async function consume(kafka, req) {
  const consumer = kafka.consumer({ groupId: req.group, maxWaitTimeInMs: 100 })
  const consumed = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic: req.topic, fromBeginning: true })
    await new Promise((resolve, reject) => {
      // kafkajs restarts a crashed consumer (e.g. no group coordinator)
      // until our deadline; the first crash already tells what is wrong.
      consumer.on(consumer.events.CRASH, ({ payload }) => reject(payload.error))
      consumer
        .run({
          autoCommit: false, // committed once below, so the caller knows what
          eachMessage: async ({ partition, message }) => {
            consumed.push({
              partition,
              offset: Number(message.offset),
              key: message.key === null ? '' : message.key.toString('utf8'),
              value: message.value === null ? '' : message.value.toString('utf8'),
              headers: fromHeaders(message.headers),
              timestamp: Number(message.timestamp),
            })
            if (consumed.length >= req.count) resolve()
          },
        })
        .catch(reject)
    })
    // Commit the offset after the last record consumed of each partition.
    const next = new Map()
    for (const r of consumed) next.set(r.partition, Math.max(next.get(r.partition) || 0, r.offset + 1))
    await consumer.commitOffsets(
      [...next].map(([partition, offset]) => ({ topic: req.topic, partition, offset: String(offset) })),
    )
  } finally {
    await consumer.disconnect()
  }
  return { consumed }
}

async function main() {
  const mode = process.argv[2]
  if (mode !== 'produce' && mode !== 'consume') throw new Error('usage: roundtrip.js produce|consume < request.json')
  const req = await readStdin()
  await registerCodecs()
  const kafka = new Kafka({
    clientId: 'runnel-compat-kafkajs',
    brokers: req.brokers,
    logLevel: logLevel.WARN,
    retry: { retries: 5 },
  })
  const run = mode === 'produce' ? produce(kafka, req) : consume(kafka, req)
  const out = await withTimeout(run, req.timeout_ms, `${mode} ${req.topic}`)
  process.stdout.write(JSON.stringify(out) + '\n')
}

main().then(
  () => process.exit(0),
  err => {
    console.error(err && err.stack ? err.stack : err)
    process.exit(1)
  },
)
