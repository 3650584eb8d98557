// Copying from an expanded line: its text, or a link to it (linked.js). The Clipboard
// API where the page may use it (a secure context: https, or localhost); otherwise a
// selected, hidden text area and the copy command, which plain http allows.
import { h } from "./dom.js";

export async function copyText(text) {
  if (window.isSecureContext && navigator.clipboard) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // refused (no permission, page not focused): try the old way
    }
  }
  const area = h("textarea", { readonly: true, "aria-hidden": "true", style: "position: fixed; top: 0; left: -9999px; opacity: 0" });
  area.value = text;
  const focused = document.activeElement;
  document.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch {
    copied = false;
  } finally {
    area.remove();
    if (focused instanceof HTMLElement) focused.focus({ preventScroll: true });
  }
  return copied;
}

// A button that copies `text()` and says whether it did, for 2 s (`data-copied` keeps
// the last outcome until the next click).
export function copyButton(testid, label, text) {
  const button = h("button", { type: "button", testid }, label);
  button.addEventListener("click", async (event) => {
    event.stopPropagation();
    delete button.dataset.copied;
    const copied = await copyText(text());
    button.textContent = copied ? "Copied" : "Copy failed: select and copy by hand";
    button.dataset.copied = String(copied);
    setTimeout(() => {
      button.textContent = label;
    }, 2000);
  });
  return button;
}
