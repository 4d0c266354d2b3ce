/**
 * Compile-time checks that a schema and the interface the code uses describe the same thing:
 * `const _ok: SameType<z.infer<typeof S>, I> = true` fails to compile when they drift apart.
 */

/** True only when A and B are the same type (not merely assignable either way). */
export type SameType<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** True when every A is a B (for interfaces looser than their schema, e.g. an index signature). */
export type Assignable<A, B> = [A] extends [B] ? true : false;
