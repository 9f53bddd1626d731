import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { invalid } from '../common/errors.js';

/** Bytes of the MAC kept in a cursor (128 bits: forging one means guessing them). */
const MAC_BYTES = 16;

/**
 * Opaque, tamper-evident list cursors. A cursor is the position in a listing (the last id of
 * the page, say) and a MAC over that position and the listing it belongs to (what is listed and
 * with which filter), keyed by a secret shared by every replica. A forged cursor, or one
 * carried over to another listing or filter, is refused, so a caller cannot page outside the
 * filter it was given.
 */
export class CursorCodec {
  constructor(private readonly key: Buffer) {}

  /** A new random key, hex (what the store keeps). */
  static newKey(): string {
    return randomBytes(32).toString('hex');
  }

  /** The cursor of `position` within the listing `listing` (e.g. `subject {"tenantId":"t"}`). */
  encode(listing: string, position: string): string {
    return `${Buffer.from(position, 'utf8').toString('base64url')}.${this.mac(listing, position).toString('base64url')}`;
  }

  /** The position of a cursor this service issued for `listing`; `invalid_argument` otherwise. */
  decode(listing: string, cursor: string): string {
    const dot = cursor.indexOf('.');
    if (dot > 0) {
      const position = Buffer.from(cursor.slice(0, dot), 'base64url').toString('utf8');
      const mac = Buffer.from(cursor.slice(dot + 1), 'base64url');
      if (mac.length === MAC_BYTES && timingSafeEqual(mac, this.mac(listing, position)) && this.encode(listing, position) === cursor) {
        return position;
      }
    }
    throw invalid('cursor', 'is not a cursor this service issued for this listing');
  }

  private mac(listing: string, position: string): Buffer {
    return createHmac('sha256', this.key).update(listing).update('\u0000').update(position).digest().subarray(0, MAC_BYTES);
  }
}
