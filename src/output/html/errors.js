// Keeps every error and console.error call of this page, and writes them into
// #hooktrack-errors once it exists (a headless browser reads them from the DOM).
(function () {
  var errors = [];
  window.hooktrackErrors = errors;
  function show() {
    var out = document.getElementById('hooktrack-errors');
    if (out) { out.textContent = errors.join('\n'); }
    var check = document.getElementById('hooktrack-check');
    if (check) { check.setAttribute('data-errors', String(errors.length)); }
  }
  window.hooktrackShowErrors = show;
  window.addEventListener('error', function (e) {
    errors.push('error: ' + (e.message || (e.target && e.target.tagName) || 'unknown'));
    show();
  }, true);
  window.addEventListener('unhandledrejection', function (e) {
    errors.push('unhandled rejection: ' + String(e.reason));
    show();
  });
  document.addEventListener('securitypolicyviolation', function (e) {
    errors.push('blocked by the page policy: ' + e.violatedDirective + ' ' + e.blockedURI);
    show();
  });
  var original = console.error;
  console.error = function () {
    errors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    show();
    return original.apply(console, arguments);
  };
})();
