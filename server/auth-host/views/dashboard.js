// Progressive enhancement of the dashboard's pages: every action works without this script.
// - Forms marked data-confirm ask in a dialog and then post with confirmed=yes (without the
//   script, the server shows a confirmation page instead).
// - Buttons marked data-copy (hidden without the script) copy the named field's value.
'use strict';
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm || form.querySelector('input[name="confirmed"]')) return;
  if (!window.confirm(form.dataset.confirm)) {
    event.preventDefault();
    return;
  }
  const yes = document.createElement('input');
  yes.type = 'hidden';
  yes.name = 'confirmed';
  yes.value = 'yes';
  form.appendChild(yes);
});
for (const button of document.querySelectorAll('button[data-copy]')) {
  button.hidden = false;
  button.addEventListener('click', async () => {
    const field = document.getElementById(button.dataset.copy);
    if (!field) return;
    field.select();
    try {
      await navigator.clipboard.writeText(field.value);
    } catch {
      document.execCommand('copy');
    }
    button.textContent = 'Copied';
  });
}
