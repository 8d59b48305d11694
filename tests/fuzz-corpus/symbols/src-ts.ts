/** A client. */
@injectable()
export class Api<T> extends Base {
  constructor(private readonly base: string) { super(); }
  @memo
  async fetch(url: string): Promise<T> { return get(this.base + url); }
  onClick = (e: Event) => {};
  parse(a: string): T;
  parse(a: unknown): T { return a as T; }
}
export const retry = async <T>(f: () => Promise<T>) => f();
export interface Shape { area(): number; }
namespace Geometry { export function dist(): number { return 0; } }
declare function ambient(x: number): void;
