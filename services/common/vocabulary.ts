/**
 * The enumerated values and key formats of the API (spec and contract §4), shared by the
 * handlers that enforce them and the model file's schema that describes them.
 */

/** Subject types. */
export const SUBJECT_TYPES = ['user', 'service', 'agent'] as const;
/** A resource hierarchy edge's `cascade`. */
export const CASCADES = ['inherit', 'none'] as const;
/** A resource scope link's `linkType`. */
export const LINK_TYPES = ['share', 'alias', 'mirror'] as const;
/** A policy's `effect`. */
export const EFFECTS = ['allow', 'deny'] as const;
/** What a policy targets. */
export const POLICY_TARGET_KINDS = ['resource', 'collection'] as const;
/** A scope override's `mode`. */
export const OVERRIDE_MODES = ['block', 'add', 'remove'] as const;
/** What a tag assignment targets. */
export const TAG_TARGET_TYPES = ['resource', 'subject', 'scope'] as const;
/** A resource type key: lowercase letters, digits, `_` and `-`. */
export const RESOURCE_TYPE_KEY = /^[a-z0-9_-]+$/;
