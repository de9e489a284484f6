/** The example's one page: start a draft, watch its words arrive, approve it. */
export const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Drafts</title>
<style>body{font:16px system-ui;margin:2rem;max-width:40rem} #words{min-height:4rem} button{font:inherit}</style></head>
<body>
<h1>Drafts</h1>
<button id="start">Write a draft</button>
<p id="words" aria-live="polite"></p>
<p><button id="approve" hidden>Approve</button></p>
<p id="status"></p>
<script>
const words = document.getElementById('words');
const approve = document.getElementById('approve');
const status = document.getElementById('status');
let id;
document.getElementById('start').onclick = async () => {
  words.textContent = '';
  status.textContent = 'writing';
  id = (await (await fetch('/drafts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()).id;
  const source = new EventSource('/drafts/' + id + '/out');
  source.addEventListener('value', (e) => {
    const value = JSON.parse(e.data);
    if (value.word) words.textContent += (words.textContent ? ' ' : '') + value.word;
    if (value.approve) { approve.hidden = false; approve.dataset.url = value.approve; status.textContent = 'waiting for approval'; }
  });
  source.addEventListener('end', () => source.close());
};
approve.onclick = async () => {
  await fetch(approve.dataset.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"by":"the browser"}' });
  approve.hidden = true;
  for (;;) {
    const draft = await (await fetch('/drafts/' + id)).json();
    if (draft.status === 'completed') { status.textContent = 'approved by ' + draft.output.approvedBy; return; }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};
</script>
</body>
</html>
`;
