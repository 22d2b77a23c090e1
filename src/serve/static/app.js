// The app store's script. The pages work without it; it only adds: live phases and the status
// matrix from the event stream (/api/v1/events), a plan's apply progress, the values mode switch,
// the version chooser's change, and copy buttons.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function announce(text) {
    var live = document.getElementById("live");
    if (live) { live.textContent = text; }
  }

  // The version chooser shows the chosen version at once.
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { if (select.form) { select.form.submit(); } });
  });

  // Copy buttons (shown only when the script runs).
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(source.textContent).then(function () {
        announce("Copied.");
        button.textContent = "Copied";
      }, function () { announce("Copying failed: select the text and copy it."); });
    });
  });

  // Fields or YAML: only the chosen panel is shown.
  var modes = document.querySelectorAll("input[name=_mode]");
  function showMode() {
    var chosen = document.querySelector("input[name=_mode]:checked");
    var mode = chosen ? chosen.value : "form";
    document.querySelectorAll(".mode-panel").forEach(function (panel) {
      panel.hidden = panel.getAttribute("data-mode") !== mode;
    });
  }
  modes.forEach(function (m) { m.addEventListener("change", showMode); });
  if (modes.length) { showMode(); }

  // The error summary takes the focus, so a screen reader reads it first.
  var summary = document.getElementById("error-summary");
  if (summary) { summary.focus(); }

  function describe(p) {
    switch (p.event) {
      case "applying": return "Applying " + p.addon + " " + p.version;
      case "dispatching": return "Applying to " + p.clusters + (p.clusters === 1 ? " cluster" : " clusters");
      case "clusterApplied": return "Cluster " + p.cluster + ": " + p.applied + " applied, " + p.deleted + " deleted";
      case "clusterFailed": return "Cluster " + p.cluster + " failed: " + p.error;
      case "clusterHeld": return "Cluster " + p.cluster + " keeps " + p.version;
      case "clusterForgotten": return "Cluster " + p.cluster + " forgotten (" + p.objects + " objects)";
      case "waitingForDependency": return "Waiting for " + p.addon + " (needed by " + (p.neededBy || []).join(", ") + ")";
      case "disabling": return (p.dryRun ? "Looking at " : "Disabling ") + p.addon;
      case "clusterRemoval": return "Cluster " + p.cluster + ": " + p.deleted + " deleted, " + p.givenBack + " given back, " + p.kept + " kept";
      case "phase": return p.addon + " is " + p.phase;
      case "clusterReadiness": return "Cluster " + p.cluster + ": " + p.readiness;
      case "stage": case "note": return p.message;
      default: return p.event || JSON.stringify(p);
    }
  }

  var state = document.getElementById("plan-state");
  var planId = state ? state.getAttribute("data-plan-id") : null;
  var progress = document.getElementById("progress");
  var matrix = document.getElementById("status-matrix");
  var phases = document.querySelectorAll("[data-live-phase]");
  if (!window.EventSource || (!planId && !matrix && !phases.length)) { return; }
  document.querySelectorAll(".js-only").forEach(function (e) { e.hidden = false; });

  function addProgress(text) {
    if (!progress) { return; }
    var item = document.createElement("li");
    item.textContent = text;
    progress.appendChild(item);
  }

  // The apply form: submitted normally (the server redirects back here), so the page shows the
  // state; the stream below shows its progress until the outcome, then the page is read again.
  var events = new EventSource("/api/v1/events");
  events.onmessage = function (message) {
    var event;
    try { event = JSON.parse(message.data); } catch (e) { return; }
    if (event.type === "progress" && planId && event.planId === planId) {
      addProgress(describe(event.progress || {}));
    } else if (event.type === "applied" && planId && event.planId === planId) {
      addProgress(event.outcome + ": " + event.message);
      var word = document.getElementById("state-word");
      if (word) { word.textContent = event.outcome; }
      setTimeout(function () { window.location.reload(); }, 800);
    } else if (event.type === "addon") {
      document.querySelectorAll("[data-live-phase]").forEach(function (e) {
        if (e.getAttribute("data-live-phase") === event.addon) { e.textContent = event.phase; }
      });
      if (matrix) {
        var row = null;
        matrix.querySelectorAll("tr[data-addon]").forEach(function (r) {
          if (r.getAttribute("data-addon") === event.addon) { row = r; }
        });
        var news = document.getElementById("status-news");
        if (row) {
          var set = function (field, text) {
            var cell = row.querySelector("[data-field=" + field + "]");
            if (cell && cell.textContent !== text) { cell.textContent = text; return true; }
            return false;
          };
          var changed = set("phase", event.phase);
          var phaseCell = row.querySelector("[data-field=phase]");
          if (phaseCell) { phaseCell.className = "phase phase-" + event.phase; }
          set("version", event.version || "");
          if (event.ready) { set("ready", event.ready[0] + "/" + event.ready[1]); }
          if (changed && news) { news.textContent = event.addon + " is " + event.phase + "."; }
        } else if (news && event.phase !== "disabled") {
          news.textContent = event.addon + " is " + event.phase + ": refresh the page to see it in the table.";
        }
      }
    } else if (event.type === "lagged" && planId) {
      addProgress("Some events were missed; refresh the page for the state.");
    }
  };
  if (state && state.getAttribute("data-state") === "applying") {
    addProgress("Applying; progress follows.");
  }
})();
