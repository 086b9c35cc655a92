// Strata Console: a little progressive enhancement; every page works without it.
"use strict";

// Forms marked data-confirm ask first (deleting a passage).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
});

// A live character count under each block editor, against the block's limit.
function countChars(textarea) {
  let note = textarea.nextElementSibling;
  if (!note || !note.classList.contains("draft-count")) {
    note = document.createElement("p");
    note.className = "draft-count";
    note.setAttribute("aria-live", "polite");
    textarea.insertAdjacentElement("afterend", note);
  }
  const used = Array.from(textarea.value).length;
  const limit = Number(textarea.dataset.limit);
  note.textContent = `${used} / ${limit} characters after this edit`;
  note.classList.toggle("over", used > limit);
}
for (const textarea of document.querySelectorAll("textarea[data-limit]")) {
  textarea.addEventListener("input", () => countChars(textarea));
}

// Tool playground: choosing a tool fills an argument skeleton from its JSON schema.
const toolSelect = document.getElementById("tool");
const toolArgs = document.getElementById("arguments");
if (toolSelect && toolArgs) {
  toolSelect.addEventListener("change", () => {
    const option = toolSelect.selectedOptions[0];
    if (toolArgs.value.trim() && toolArgs.value.trim() !== "{}" && !toolArgs.dataset.filled) return;
    try {
      const schema = JSON.parse(option.dataset.schema || "{}");
      const props = (schema.parameters || schema).properties || {};
      const skeleton = {};
      for (const [name, spec] of Object.entries(props)) {
        skeleton[name] = spec.type === "integer" || spec.type === "number" ? 0 : "";
      }
      toolArgs.value = JSON.stringify(skeleton, null, 2);
      toolArgs.dataset.filled = "1";
    } catch (error) {
      // a schema the page cannot read: leave the arguments as they are
    }
  });
}

// Operations: Reindex streams "done total" lines; show them as live progress.
const reindexForm = document.getElementById("reindex-form");
if (reindexForm) {
  reindexForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const bar = document.getElementById("reindex-progress");
    const status = document.getElementById("reindex-status");
    reindexForm.querySelector("button").disabled = true;
    status.textContent = "Reindexing…";
    const response = await fetch(reindexForm.action, { method: "POST", body: new FormData(reindexForm), credentials: "same-origin" });
    if (!response.ok) {
      status.textContent = `Refused (HTTP ${response.status}): reload the page and try again.`;
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let pending = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop();
      for (const line of lines) {
        if (line.startsWith("error")) { status.textContent = line; continue; }
        const [doneCount, total, finished] = line.split(" ");
        bar.max = Math.max(Number(total), 1);
        bar.value = Number(doneCount);
        status.textContent = finished ? `Done: ${doneCount} of ${total} documents reindexed.` : `${doneCount} of ${total} documents…`;
      }
    }
    status.textContent += " Reload the page to reindex again.";
  });
}
