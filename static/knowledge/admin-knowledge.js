/* Live Markdown preview beside the snippet body. The HTML comes from the server's sanitiser
   (knowledge.markdown.render_markdown), the same one the history and diff pages use. */
(function () {
  "use strict";
  function init() {
    var body = document.getElementById("id_body");
    var config = document.getElementById("kn-preview-config");
    if (!body || !config || body.readOnly) { return; }
    var form = body.form;
    var token = form && form.querySelector("input[name=csrfmiddlewaretoken]");
    var editor = document.createElement("div");
    editor.className = "kn-editor";
    body.parentNode.insertBefore(editor, body);
    var left = document.createElement("div");
    left.appendChild(body);
    var right = document.createElement("div");
    var label = document.createElement("div");
    label.className = "kn-preview-label";
    label.textContent = "Preview";
    var preview = document.createElement("div");
    preview.className = "kn-preview kn-rendered";
    preview.id = "kn-preview";
    preview.setAttribute("aria-live", "polite");
    right.appendChild(label);
    right.appendChild(preview);
    editor.appendChild(left);
    editor.appendChild(right);

    var timer = null, sent = null;
    function refresh() {
      var text = body.value;
      if (text === sent) { return; }
      sent = text;
      var data = new FormData();
      data.append("body", text);
      fetch(config.dataset.url, {
        method: "POST", body: data, credentials: "same-origin",
        headers: {"X-CSRFToken": token ? token.value : ""}
      }).then(function (response) { return response.ok ? response.json() : null; })
        .then(function (payload) {
          if (payload && text === body.value) { preview.innerHTML = payload.html; }
        }).catch(function () { /* the preview is a convenience; saving still works */ });
    }
    body.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(refresh, 300);
    });
    refresh();
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();
