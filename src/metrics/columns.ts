type Typed = Float64Array | Float32Array | Uint16Array | Uint8Array;

/** A growable typed array: a few bytes per query instead of an object, so a long run stays small. */
export class Column<T extends Typed> {
  private buf: T;
  length = 0;

  constructor(private readonly make: (n: number) => T) {
    this.buf = make(1024);
  }

  push(v: number): void {
    if (this.length === this.buf.length) {
      const next = this.make(this.buf.length * 2);
      next.set(this.buf as never);
      this.buf = next;
    }
    this.buf[this.length++] = v;
  }

  get(i: number): number {
    return this.buf[i] ?? Number.NaN;
  }
}

export const f64 = (): Column<Float64Array> => new Column((n) => new Float64Array(n));
export const f32 = (): Column<Float32Array> => new Column((n) => new Float32Array(n));
export const u8 = (): Column<Uint8Array> => new Column((n) => new Uint8Array(n));
export const u16 = (): Column<Uint16Array> => new Column((n) => new Uint16Array(n));
