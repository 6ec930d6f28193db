/* Ratiba web widget: a chat bubble for a business's own website. Plain JS, no dependencies.
   <script src=".../static/chat/widget.js" data-ratiba-host="https://spa.example" data-ratiba-key="rk_..." defer></script>
   Streams answers from POST /api/v1/chat/turns/stream/ (Server-Sent Events) with the widget's API key. */
(function () {
  "use strict";
  var script = document.currentScript || document.querySelector("script[data-ratiba-key]");
  if (!script) { return; }
  var host = (script.getAttribute("data-ratiba-host") || "").replace(/\/$/, "");
  var key = script.getAttribute("data-ratiba-key");
  var title = script.getAttribute("data-ratiba-title") || "Ask us";
  var storageKey = "ratiba-session:" + host;
  var css = [
    ".rk-bubble{position:fixed;right:20px;bottom:20px;width:56px;height:56px;border-radius:50%;border:0;",
    "background:#0f766e;color:#fff;font-size:26px;cursor:pointer;box-shadow:0 6px 18px rgba(0,0,0,.25);z-index:2147483000}",
    ".rk-panel{position:fixed;right:20px;bottom:88px;width:min(360px,92vw);height:min(520px,70vh);background:#fff;",
    "border-radius:12px;box-shadow:0 12px 40px rgba(0,0,0,.25);display:flex;flex-direction:column;overflow:hidden;",
    "font:14px/1.45 system-ui,sans-serif;color:#1d2a33;z-index:2147483000}",
    ".rk-panel[hidden]{display:none}.rk-head{background:#0f766e;color:#fff;padding:10px 14px;font-weight:600}",
    ".rk-log{flex:1;overflow:auto;padding:10px;display:flex;flex-direction:column;gap:8px}",
    ".rk-msg{max-width:85%;padding:7px 10px;border-radius:10px;white-space:pre-wrap}",
    ".rk-user{align-self:flex-end;background:#0f766e;color:#fff}.rk-bot{align-self:flex-start;background:#eef4f5}",
    ".rk-refused{background:#fff7ed}.rk-src{display:block;margin-top:4px;font-size:12px;color:#60707c}",
    ".rk-form{display:flex;border-top:1px solid #dde3e7}.rk-form input{flex:1;border:0;padding:10px;font:inherit}",
    ".rk-form button{border:0;background:#0f766e;color:#fff;padding:0 14px;font:inherit;cursor:pointer}"
  ].join("");
  var style = document.createElement("style");
  style.textContent = css;
  document.head.appendChild(style);

  function el(tag, className, text) {
    var node = document.createElement(tag);
    node.className = className || "";
    if (text) { node.textContent = text; }
    return node;
  }
  var bubble = el("button", "rk-bubble", "💬");
  bubble.setAttribute("aria-label", title);
  var panel = el("div", "rk-panel");
  panel.hidden = true;
  panel.appendChild(el("div", "rk-head", title));
  var log = el("div", "rk-log");
  panel.appendChild(log);
  var form = el("form", "rk-form");
  var input = el("input");
  input.placeholder = "Type your question…";
  input.maxLength = 2000;
  var button = el("button", "", "Send");
  form.appendChild(input);
  form.appendChild(button);
  panel.appendChild(form);
  document.body.appendChild(panel);
  document.body.appendChild(bubble);
  bubble.addEventListener("click", function () { panel.hidden = !panel.hidden; if (!panel.hidden) { input.focus(); } });

  function drain(buffer, onEvent) {
    var boundary;
    while ((boundary = buffer.indexOf("\n\n")) !== -1) {
      var block = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      var name = "message", data = [];
      block.split("\n").forEach(function (line) {
        if (line.indexOf("event:") === 0) { name = line.slice(6).trim(); }
        else if (line.indexOf("data:") === 0) { data.push(line.slice(5).replace(/^ /, "")); }
      });
      if (data.length) { onEvent(name, JSON.parse(data.join("\n"))); }
    }
    return buffer;
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var message = input.value.trim();
    if (!message) { return; }
    input.value = "";
    log.appendChild(el("div", "rk-msg rk-user", message));
    var answer = el("div", "rk-msg rk-bot", "…");
    log.appendChild(answer);
    var streamed = "";
    var session = null;
    try { session = window.sessionStorage.getItem(storageKey); } catch (e) { session = null; }
    fetch(host + "/api/v1/chat/turns/stream/", {
      method: "POST",
      headers: {"Content-Type": "application/json", "Accept": "text/event-stream", "Authorization": "Bearer " + key},
      body: JSON.stringify({message: message, session_id: session, channel: "chat"})
    }).then(function (response) {
      if (!response.ok) { answer.textContent = "Sorry, something went wrong. Please try again."; return; }
      var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
      function onEvent(name, data) {
        if (name === "delta") { streamed += data.text; answer.textContent = streamed; }
        if (name === "final") {
          answer.textContent = data.answer;
          if (data.refusal_reason) { answer.className += " rk-refused"; }
          try { window.sessionStorage.setItem(storageKey, data.session_id); } catch (e) { /* private mode */ }
          if (data.citations && data.citations.length) {
            answer.appendChild(el("span", "rk-src", "Sources: " + data.citations.map(function (c) {
              return "[" + c.ref + "] " + c.title;
            }).join(", ")));
          }
        }
        log.scrollTop = log.scrollHeight;
      }
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) { return; }
          buffer = drain(buffer + decoder.decode(chunk.value, {stream: true}), onEvent);
          return pump();
        });
      }
      return pump();
    }).catch(function () { answer.textContent = "Sorry, we could not connect. Please try again."; });
  });
})();
