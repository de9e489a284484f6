// Cost in Node of the write batch's parameter: entries as objects (before f7a2f8c) vs entries as JSON text made at write() time (after).
const entry = (i) => [
  {
    name: 'step-1',
    kind: 'step',
    state: 'completed',
    value: { i, step: 1 },
    attempts: 1,
    createdAt: 1764580000000,
    updatedAt: 1764580000000,
  },
];
const base = (i) => ({
  id: `bench-${i}`,
  token: '6f1c2d4e-0000-4000-8000-000000000000',
  count: 1,
  now: 1764580000000,
  set_status: false,
  status: null,
  set_output: false,
  output: null,
  set_error: false,
  error: null,
  set_custom: false,
  custom_status: null,
  release: false,
  wake_at: null,
});
const B = 200,
  ROUNDS = 2000;
function before() {
  const rows = [];
  for (let i = 0; i < B; i++) rows.push({ ...base(i), entries: entry(i) });
  return JSON.stringify(rows).length;
}
function after() {
  const rows = [];
  for (let i = 0; i < B; i++) {
    const text = JSON.stringify(entry(i));
    rows.push({ ...base(i), entries: text });
  }
  return JSON.stringify(rows).length;
}
for (const f of [before, after]) for (let r = 0; r < 200; r++) f();
const time = (f) => {
  const t = process.hrtime.bigint();
  for (let r = 0; r < ROUNDS; r++) f();
  return Number(process.hrtime.bigint() - t) / 1e3 / (ROUNDS * B);
};
const res = { before: [], after: [] };
for (let k = 0; k < 5; k++) {
  res.before.push(time(before));
  res.after.push(time(after));
}
const med = (a) => [...a].sort((x, y) => x - y)[2];
console.log(
  JSON.stringify({
    us_per_write_before: med(res.before).toFixed(3),
    us_per_write_after: med(res.after).toFixed(3),
    bytes_before: before(),
    bytes_after: after(),
  }),
);
