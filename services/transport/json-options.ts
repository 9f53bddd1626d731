import type { JsonReadOptions, JsonWriteOptions } from '@bufbuild/protobuf';

/**
 * JSON options of every surface: implicit fields are always written (`allowed: false`,
 * `priority: 0`), and unknown fields are rejected, as the proto JSON rules recommend.
 */
export const JSON_OPTIONS: Partial<JsonReadOptions & JsonWriteOptions> = {
  alwaysEmitImplicit: true,
  ignoreUnknownFields: false,
};
