/**
 * The wire limits of every request, on every surface of both processes. They bound what a
 * request can cost before anything looks at what it means: each is checked while the body is
 * scanned (binary-scan.ts, json-scan.ts), so a request over one is refused after at most the work
 * the limit allows, however large the body behind it. Validation of what the fields mean comes
 * after, and tighter (16 KiB of JSON per metadata or context, 256 characters per string).
 */
import { MAX_BATCH, MAX_JSON_BYTES } from '../common/validate.js';

/** Request body limit of every surface (contract §6). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Items a repeated request field may hold without a `(authz.v1.max_items)` option: the batch limit. */
export const DEFAULT_MAX_ITEMS = MAX_BATCH;

/** Bytes of JSON one JSON value of a request (metadata, attributes, a context, a condition) may take. */
export const MAX_JSON_VALUE_BYTES = MAX_JSON_BYTES;

/**
 * Bytes of protobuf a JSON value's field may take: an element of a number list, the densest JSON
 * (`0,`, two bytes), takes eleven in protobuf (tag, length, Value with its tag and a double), so a
 * value past this cannot be within MAX_JSON_VALUE_BYTES.
 */
export const MAX_JSON_VALUE_WIRE_BYTES = 11 * MAX_JSON_VALUE_BYTES;

/** Nesting levels of a JSON value: above any JSON Logic rule or match definition the engine accepts. */
export const MAX_JSON_DEPTH = 128;

/**
 * Entries (keys of an object, elements of an array) one JSON object or array may hold. A JSON
 * value of 16 KiB, the most any field stores or a decision reads, cannot hold more, so this refuses
 * nothing valid: it refuses early what validation would refuse after decoding.
 */
export const MAX_JSON_ENTRIES = 10_000;

/**
 * Values a request may hold in all: JSON values of a JSON body, fields (each list item, map entry
 * and Struct entry counted) of a binary one. A batch of 1,000 items of ten fields each uses a tenth.
 */
export const MAX_REQUEST_VALUES = 100_000;

/**
 * Fields a binary request may carry that its message type does not declare (a newer client's):
 * skipped, as protobuf readers do, up to this many.
 */
export const MAX_UNKNOWN_FIELDS = 64;

/**
 * Message nesting a binary request may have. The decoder recurses once per level (a JSON level
 * is three: Struct, map entry, Value), so a hostile nesting is refused before decoding; the
 * guard then holds JSON values to MAX_JSON_DEPTH.
 */
export const MAX_BINARY_NESTING = 3 * MAX_JSON_DEPTH + 32;
