/* The owner's chat page: POSTs to the session-authenticated stream endpoint and renders SSE as it arrives.
   Plain JS, no libraries; all text goes into the DOM as text nodes (never as HTML). */
(function () {
  "use strict";

  var root = document.getElementById("chat");
  if (!root) { return; }
  var streamUrl = root.dataset.streamUrl;
  var citationUrl = root.dataset.citationUrl;
  var previewUrl = root.dataset.whatsappPreviewUrl || "/chat/whatsapp-preview/";
  var csrf = root.dataset.csrf;
  var log = document.getElementById("chat-log");
  var empty = document.getElementById("chat-empty");
  var form = document.getElementById("chat-form");
  var input = document.getElementById("chat-message");
  var send = document.getElementById("chat-send");
  var channel = document.getElementById("chat-channel");
  var language = document.getElementById("chat-language");
  var card = document.getElementById("citation-card");
  var sessionId = null;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined && text !== null) { node.textContent = text; }
    return node;
  }

  function scrollDown() { log.scrollTop = log.scrollHeight; window.scrollTo(0, document.body.scrollHeight); }

  // ------------------------------------------------------------------ Server-Sent Events over fetch
  function drain(buffer, onEvent) {
    var boundary;
    while ((boundary = buffer.indexOf("\n\n")) !== -1) {
      var block = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      var name = "message";
      var data = [];
      block.split("\n").forEach(function (line) {
        if (line.indexOf("event:") === 0) { name = line.slice(6).trim(); }
        else if (line.indexOf("data:") === 0) { data.push(line.slice(5).replace(/^ /, "")); }
      });
      if (data.length) { onEvent(name, JSON.parse(data.join("\n"))); }
    }
    return buffer;
  }

  // ------------------------------------------------------------------ rendering
  function inline(parent, text, citations) {
    var byRef = {};
    citations.forEach(function (c) { byRef[c.ref] = c; });
    var pattern = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;
    var last = 0;
    var match;
    while ((match = pattern.exec(text)) !== null) {
      parent.appendChild(document.createTextNode(text.slice(last, match.index)));
      match[1].split(",").forEach(function (part) {
        var ref = parseInt(part, 10);
        var citation = byRef[ref];
        if (citation) {
          var button = el("button", "cite", "[" + ref + "]");
          button.type = "button";
          button.title = citation.title + " (v" + citation.version + ")";
          button.addEventListener("click", function () { openCitation(citation); });
          parent.appendChild(button);
        } else {
          parent.appendChild(document.createTextNode("[" + ref + "]"));
        }
      });
      last = pattern.lastIndex;
    }
    parent.appendChild(document.createTextNode(text.slice(last)));
  }

  function renderText(container, text, citations) {
    container.textContent = "";
    var list = null;
    text.split("\n").forEach(function (line) {
      var trimmed = line.trim();
      if (!trimmed) { list = null; return; }
      if (/^[-*•]\s+/.test(trimmed)) {
        if (!list) { list = el("ul"); container.appendChild(list); }
        var item = el("li");
        inline(item, trimmed.replace(/^[-*•]\s+/, ""), citations);
        list.appendChild(item);
      } else {
        list = null;
        var p = el("p");
        inline(p, trimmed, citations);
        container.appendChild(p);
      }
    });
  }

  function renderFinal(bubble, data) {
    bubble.classList.remove("streaming");
    var answer = bubble.querySelector(".answer");
    if (data.refusal_reason) {
      bubble.classList.add("refused");
      var badge = el("span", "refusal-badge", "Not answered · " + data.refusal_reason);
      bubble.insertBefore(badge, answer);
    }
    renderText(answer, data.answer, data.citations || []);
    var cited = (data.citations || []).filter(function (c) { return true; });
    if (cited.length) {
      var sources = el("div", "sources");
      sources.appendChild(el("span", "muted", "Sources:"));
      cited.forEach(function (c) {
        var chip = el("button", "", "[" + c.ref + "] " + c.title + (c.version ? " · v" + c.version : ""));
        chip.type = "button";
        chip.addEventListener("click", function () { openCitation(c); });
        sources.appendChild(chip);
      });
      bubble.appendChild(sources);
    }
    var meta = data.meta || {};
    if (meta.handoff) {
      var link = el("a", "handoff-badge", "Hand-off recorded: " + meta.handoff.kind + " (" + meta.handoff.status + ")");
      link.href = "/admin/conversations/handoffrequest/" + meta.handoff.id + "/change/";
      bubble.appendChild(link);
    }
    var parts = [data.intent, meta.provider + (meta.model ? " · " + meta.model : ""), meta.latency_ms + " ms"];
    if (meta.mode) { parts.push(meta.mode + " retrieval"); }
    if (meta.fallback_reason) { parts.push("fallback: " + meta.fallback_reason); }
    if (meta.cost_usd) { parts.push("$" + Number(meta.cost_usd).toFixed(4)); }
    bubble.appendChild(el("div", "meta", parts.join(" · ")));
    if (data.channel === "whatsapp") { whatsappPreview(bubble, data.turn_id); }
  }

  // What a WhatsApp customer would read: the server's plain-text rendering of the stored answer.
  function whatsappPreview(bubble, turnId) {
    var box = el("div", "wa-preview");
    box.appendChild(el("span", "wa-label", "On WhatsApp the customer reads"));
    var text = el("div", "wa-text", "…");
    box.appendChild(text);
    bubble.appendChild(box);
    fetch(previewUrl + encodeURIComponent(turnId) + "/", {credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (body) { text.textContent = body.text; scrollDown(); },
            function () { text.textContent = "(preview unavailable)"; });
  }

  function openCitation(citation) {
    document.getElementById("citation-title").textContent = citation.title;
    document.getElementById("citation-version").textContent = citation.version ? "v" + citation.version : citation.source;
    document.getElementById("citation-excerpt").textContent = citation.excerpt;
    document.getElementById("citation-reviewed").textContent =
      citation.last_reviewed_at ? "Last reviewed " + citation.last_reviewed_at : "";
    document.getElementById("citation-open").href =
      citationUrl + encodeURIComponent(citation.key) + "/" + (citation.version || 0) + "/";
    card.hidden = false;
  }
  document.getElementById("citation-close").addEventListener("click", function () { card.hidden = true; });

  function fail(bubble, message) {
    bubble.classList.remove("streaming");
    bubble.classList.add("failed");
    bubble.querySelector(".answer").textContent = message;
  }

  // ------------------------------------------------------------------ sending
  function ask(message) {
    if (empty) { empty.remove(); empty = null; }
    log.appendChild(el("li", "msg user", message));
    var bubble = el("li", "msg bot streaming");
    bubble.appendChild(el("div", "answer"));
    log.appendChild(bubble);
    scrollDown();
    var streamed = "";
    var finished = false;
    send.disabled = true;
    var sentChannel = channel.value;
    var body = JSON.stringify({message: message, session_id: sessionId, channel: sentChannel, language: language.value});
    return fetch(streamUrl, {
      method: "POST", credentials: "same-origin", body: body,
      headers: {"Content-Type": "application/json", "Accept": "text/event-stream", "X-CSRFToken": csrf}
    }).then(function (response) {
      if (!response.ok) {
        return response.json().then(function (error) {
          var detail = error.error || {};
          var text = detail.message || ("HTTP " + response.status);
          if (detail.fields) { text += " " + JSON.stringify(detail.fields); }
          if (response.status === 429) { text += " (retry in " + response.headers.get("Retry-After") + " s)"; }
          fail(bubble, text);
        }, function () { fail(bubble, "HTTP " + response.status); });
      }
      var reader = response.body.getReader();
      var decoder = new TextDecoder();
      var buffer = "";
      function onEvent(name, data) {
        if (name === "delta") {
          streamed += data.text;
          bubble.querySelector(".answer").textContent = streamed;
          scrollDown();
        } else if (name === "final") {
          finished = true;
          sessionId = data.session_id;
          data.channel = sentChannel;
          renderFinal(bubble, data);
          scrollDown();
        } else if (name === "error") {
          finished = true;
          fail(bubble, (data.error && data.error.message) || "The answer could not be completed.");
        }
      }
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) {
            buffer = drain(buffer + decoder.decode() + "\n\n", onEvent);
            if (!finished) { fail(bubble, "The connection closed before the answer finished."); }
            return;
          }
          buffer = drain(buffer + decoder.decode(chunk.value, {stream: true}), onEvent);
          return pump();
        });
      }
      return pump();
    }).catch(function () {
      fail(bubble, "Could not reach the server.");
    }).then(function () {
      send.disabled = false;
      input.focus();
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var message = input.value.trim();
    if (!message || send.disabled) { return; }
    input.value = "";
    ask(message);
  });
  input.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });
  document.getElementById("chat-new").addEventListener("click", function () {
    sessionId = null;
    log.textContent = "";
    card.hidden = true;
    input.focus();
  });
})();
