// A TypeScript user of the package, compiled by test/types.test.js with `tsc --strict` (no
// skipLibCheck): the package's types must compile, leave TypeScript's own Record<K, V> alone,
// and give mendArgs a useful type.
import * as toolmend from 'toolmend';
import { MendRecord, Mender, ToolmendError, mendArgs, mendMany } from 'toolmend';

// TypeScript's Record, not the package's class.
const counts: Record<string, number> = { a: 1 };
const args: Record<string, any> = mendArgs('{"a": 1,}');
const city: string = mendArgs('{"city": "Oslo"}').city;
const record: MendRecord = new Mender({ target: 'any', truncated: 'heal' }).mend('[1, 2');
const kinds: string[] = record.repairs.map((r) => r.kind);
const ok: boolean = record.ok;

async function many(): Promise<MendRecord[]> {
  return mendMany(['{"a": 1}'], { threads: 1 });
}

try {
  mendArgs('{"cmd": "rm -rf build/x', { truncated: 'error' });
} catch (e) {
  if (e instanceof ToolmendError) {
    const code: string = e.code;
    console.log(code);
  }
}

console.log(counts, args, city, kinds, ok, many, toolmend.version);
