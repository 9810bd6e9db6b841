// Hover, zoom and the overview strip. The page is complete without this script; it only
// redraws the positioned marks (data-a, data-b: their span on the axis) for a new view.
(function () {
  'use strict';
  var svg = document.getElementById('main');
  var overview = document.getElementById('overview');
  var frame = document.getElementById('ov-window');
  var axisGroup = document.getElementById('axis');
  var tip = document.getElementById('tip');
  var NS = 'http://www.w3.org/2000/svg';
  var d = svg.dataset;
  var time = d.axis === 'time';
  var t0 = +d.t0, lo0 = +d.lo, hi0 = +d.hi;
  var left = +d.left, width = +d.width, top = +d.top, bottom = +d.bottom;
  var minSpan = time ? 20 : 4;
  var lo = lo0, hi = hi0;
  var items = Array.prototype.slice.call(svg.querySelectorAll('[data-a]'));

  // Tooltips: each mark's <title> becomes its data-tip, shown in #tip.
  Array.prototype.forEach.call(document.querySelectorAll('svg title'), function (t) {
    var p = t.parentNode;
    p.setAttribute('data-tip', t.textContent);
    p.removeChild(t);
  });

  function px(v) { return left + (v - lo) / (hi - lo) * width; }

  function draw() {
    for (var i = 0; i < items.length; i++) {
      var el = items[i];
      var a = px(+el.getAttribute('data-a')), b = px(+el.getAttribute('data-b'));
      if (el.tagName === 'text') {
        var from = Math.max(a, left);
        var fits = Math.min(b, left + width) - from >= +el.getAttribute('data-w') + 4;
        el.setAttribute('x', (from + 3).toFixed(1));
        el.style.display = fits ? '' : 'none';
        continue;
      }
      var w = Math.max(b - a, +el.getAttribute('data-m'));
      var x = el.hasAttribute('data-c') ? a - w / 2 : a;
      el.setAttribute('x', x.toFixed(1));
      el.setAttribute('width', w.toFixed(1));
    }
    drawAxis();
    var fx = left + (lo - lo0) / (hi0 - lo0) * width;
    var fw = Math.max((hi - lo) / (hi0 - lo0) * width, 2);
    frame.setAttribute('x', fx.toFixed(1));
    frame.setAttribute('width', fw.toFixed(1));
  }

  var TIME_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4,
    6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5];

  function step() {
    var target = Math.max((hi - lo) / 10, 1);
    if (time) {
      for (var i = 0; i < TIME_STEPS.length; i++) {
        if (TIME_STEPS[i] >= target) { return TIME_STEPS[i]; }
      }
      return 864e5 * Math.ceil(target / 864e5);
    }
    for (var p = 1; p < 1e15; p *= 10) {
      for (var c = 1; c <= 5; c = c === 1 ? 2 : c + 3) {
        if (c * p >= target) { return c * p; }
      }
    }
    return target;
  }

  function drawAxis() {
    while (axisGroup.firstChild) { axisGroup.removeChild(axisGroup.firstChild); }
    var s = step();
    var base = time ? t0 : 0;
    var v = Math.floor((lo + base) / s) * s - base;
    if (v < lo) { v += s; }
    if (!time && v < 1) { v += s * Math.ceil((1 - v) / s); }
    for (var n = 0; v <= hi && n < 64; v += s, n++) {
      var x = px(v).toFixed(1);
      var labelled = px(v) >= left + 36 && px(v) <= left + width - 36;
      var line = document.createElementNS(NS, 'line');
      line.setAttribute('class', 'tick');
      line.setAttribute('x1', x); line.setAttribute('x2', x);
      line.setAttribute('y1', top - 4); line.setAttribute('y2', bottom);
      axisGroup.appendChild(line);
      if (!labelled) { continue; }
      var label = document.createElementNS(NS, 'text');
      label.setAttribute('class', 'tick-label');
      label.setAttribute('x', x); label.setAttribute('y', top - 8);
      label.textContent = time
        ? new Date(t0 + v).toISOString().substring(11, s < 1000 ? 23 : 19)
        : 'line ' + v;
      axisGroup.appendChild(label);
    }
  }

  function setView(a, b) {
    var span = Math.max(Math.min(b - a, hi0 - lo0), Math.min(minSpan, hi0 - lo0));
    a = Math.min(Math.max(a, lo0), hi0 - span);
    lo = a; hi = a + span;
    draw();
    remember();
  }

  // The view goes into the address (#view=A,B), so a reload or a shared link keeps it.
  var rememberTimer = null;
  function remember() {
    clearTimeout(rememberTimer);
    rememberTimer = setTimeout(function () {
      if (window.history && history.replaceState) {
        history.replaceState(null, '', '#view=' + Math.round(lo) + ',' + Math.round(hi));
      }
    }, 300);
  }

  function zoom(factor, center) {
    var c = center === undefined ? (lo + hi) / 2 : center;
    var span = (hi - lo) * factor;
    setView(c - (c - lo) * factor, c - (c - lo) * factor + span);
  }

  // Client x → user units of an svg (it may be scaled by CSS).
  function userX(el, clientX) {
    var r = el.getBoundingClientRect();
    return (clientX - r.left) * (+el.getAttribute('width') / r.width);
  }
  function valueAt(x) { return lo + (x - left) / width * (hi - lo); }

  svg.addEventListener('wheel', function (e) {
    e.preventDefault();
    zoom(e.deltaY < 0 ? 0.8 : 1.25, valueAt(userX(svg, e.clientX)));
  }, { passive: false });

  var drag = null;
  svg.addEventListener('mousedown', function (e) {
    drag = { x: userX(svg, e.clientX), lo: lo, hi: hi };
    svg.classList.add('dragging');
  });
  window.addEventListener('mousemove', function (e) {
    if (drag) {
      var shift = (userX(svg, e.clientX) - drag.x) / width * (drag.hi - drag.lo);
      setView(drag.lo - shift, drag.hi - shift);
    }
    if (ovDrag) {
      ovDrag.to = userX(overview, e.clientX);
    }
    var el = e.target && e.target.closest ? e.target.closest('[data-tip]') : null;
    if (!el || drag) { tip.hidden = true; return; }
    tip.textContent = el.getAttribute('data-tip');
    tip.hidden = false;
    var x = e.clientX + 14, y = e.clientY + 14;
    var r = tip.getBoundingClientRect();
    if (x + r.width > window.innerWidth - 4) { x = Math.max(4, e.clientX - r.width - 14); }
    if (y + r.height > window.innerHeight - 4) { y = Math.max(4, e.clientY - r.height - 14); }
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  });
  window.addEventListener('mouseup', function () {
    if (drag) { drag = null; svg.classList.remove('dragging'); }
    if (ovDrag) {
      var full = function (x) { return lo0 + (x - left) / width * (hi0 - lo0); };
      var a = full(Math.min(ovDrag.from, ovDrag.to)), b = full(Math.max(ovDrag.from, ovDrag.to));
      if (Math.abs(ovDrag.to - ovDrag.from) < 3) {
        var span = hi - lo;
        setView(a - span / 2, a + span / 2);
      } else {
        setView(a, b);
      }
      ovDrag = null;
    }
  });
  var ovDrag = null;
  overview.addEventListener('mousedown', function (e) {
    var x = userX(overview, e.clientX);
    ovDrag = { from: x, to: x };
    e.preventDefault();
  });
  overview.addEventListener('dblclick', function () { setView(lo0, hi0); });
  svg.addEventListener('dblclick', function () { setView(lo0, hi0); });

  document.getElementById('zoom-in').addEventListener('click', function () { zoom(0.5); });
  document.getElementById('zoom-out').addEventListener('click', function () { zoom(2); });
  document.getElementById('zoom-reset').addEventListener('click', function () { setView(lo0, hi0); });
  document.addEventListener('keydown', function (e) {
    if (e.key === '+' || e.key === '=') { zoom(0.5); }
    else if (e.key === '-') { zoom(2); }
    else if (e.key === '0') { setView(lo0, hi0); }
  });

  // `page.html#view=A,B` opens zoomed on A..B (axis units: milliseconds after the first
  // event, or line numbers), as the zoom leaves it.
  var asked = /^#view=(-?[0-9.]+),(-?[0-9.]+)$/.exec(window.location.hash);
  if (asked) { setView(+asked[1], +asked[2]); } else { draw(); }

  // What the page drew, for a headless browser to read back.
  var check = document.getElementById('hooktrack-check');
  ['turn', 'tool', 'blocked', 'compaction', 'note', 'skip', 'event'].forEach(function (k) {
    check.setAttribute('data-' + k, String(svg.querySelectorAll('[data-kind=' + k + ']').length));
  });
  check.setAttribute('data-script', 'ok');
  window.hooktrackShowErrors();
})();
